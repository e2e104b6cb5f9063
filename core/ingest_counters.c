/*
 * ingest_counters: what the record path counts (struct gw_ingest_counters,
 * ingest.h) and the one table both /v1/stats and /metrics are rendered
 * from: each counter's metric name, its key in /v1/stats, its help text and
 * its dimensions (none; by transport; by transport and reject reason; by
 * detector and severity).  Loop thread only, like the counters themselves.
 */
#include "ingest_impl.h"

#include "detector.h"
#include "registry.h"

#include "util.h"

#include <stddef.h>

static const char *const transport_names[GW_NTRANSPORTS] = {
	"unix", "tcp", "udp", "http", "follow",
};

const char *gw_transport_name(enum gw_transport t)
{
	return (unsigned)t < GW_NTRANSPORTS ? transport_names[t] : "?";
}

void gw_ingest_count_connection(struct gw_ingest *in)
{
	in->n.connections++;
}

void gw_ingest_count_udp_dropped(struct gw_ingest *in)
{
	in->n.udp_dropped++;
}

void gw_ingest_count_reject(struct gw_ingest *in, enum gw_transport t, enum gw_wire_reason r)
{
	in->n.rejected[t][r]++;
}

enum dims { D_NONE, D_TRANSPORT, D_TRANSPORT_REASON, D_DETECTOR_SEVERITY };

/* The one table both /v1/stats and /metrics are rendered from. */
static const struct counter {
	const char *metric, *key, *help;
	enum dims dims;
	size_t off;
} counters[] = {
	{"gradwatch_lines_ingested_total", "accepted",
	 "Lines accepted (records and events), by transport.", D_TRANSPORT,
	 offsetof(struct gw_ingest_counters, accepted)},
	{"gradwatch_events_ingested_total", "events", "Event lines accepted, by transport.",
	 D_TRANSPORT, offsetof(struct gw_ingest_counters, events)},
	{"gradwatch_received_bytes_total", "bytes", "Bytes received, by transport.", D_TRANSPORT,
	 offsetof(struct gw_ingest_counters, bytes)},
	{"gradwatch_lines_rejected_total", "rejected",
	 "Lines rejected, by transport and reason (docs/wire-format.md).", D_TRANSPORT_REASON,
	 offsetof(struct gw_ingest_counters, rejected)},
	{"gradwatch_udp_dropped_total", "udp_dropped",
	 "UDP datagrams dropped because the store's queue was full.", D_NONE,
	 offsetof(struct gw_ingest_counters, udp_dropped)},
	{"gradwatch_connections_total", "connections", "Stream connections accepted.", D_NONE,
	 offsetof(struct gw_ingest_counters, connections)},
	{"gradwatch_segments_total", "segments",
	 "Run segments opened (a run's start, restarts, wall-clock gaps).", D_NONE,
	 offsetof(struct gw_ingest_counters, segments)},
	{"gradwatch_alerts_total", "alerts", "Alerts (incidents) opened, by detector and severity.",
	 D_DETECTOR_SEVERITY, offsetof(struct gw_ingest_counters, alerts)},
};

void gw_ingest_counters_foreach(const struct gw_ingest *in,
                                void (*fn)(void *data, const struct gw_counter_sample *s),
                                void *data)
{
	for (size_t k = 0; k < GW_ARRAY_SIZE(counters); k++) {
		const struct counter *c = &counters[k];
		const uint64_t *base = (const uint64_t *)((const char *)&in->n + c->off);
		struct gw_counter_sample s = {.metric = c->metric, .key = c->key, .help = c->help,
		                              .first = true};
		switch (c->dims) {
		case D_NONE:
			s.n = *base;
			fn(data, &s);
			break;
		case D_TRANSPORT:
			s.label[0] = "transport";
			for (int t = 0; t < GW_NTRANSPORTS; t++, s.first = false) {
				s.value[0] = gw_transport_name((enum gw_transport)t);
				s.n = base[t];
				fn(data, &s);
			}
			break;
		case D_TRANSPORT_REASON:
			s.label[0] = "transport";
			s.label[1] = "reason";
			for (int t = 0; t < GW_NTRANSPORTS; t++)
				for (int r = 0; r < GW_REJ_NREASONS; r++, s.first = false) {
					s.value[0] = gw_transport_name((enum gw_transport)t);
					s.value[1] = gw_wire_reason_name((enum gw_wire_reason)r);
					s.n = base[t * GW_REJ_NREASONS + r];
					fn(data, &s);
				}
			break;
		case D_DETECTOR_SEVERITY:
			s.label[0] = "detector";
			s.label[1] = "severity";
			for (size_t d = 0; gw_det_registry[d]; d++)
				for (int v = 0; v < 3; v++, s.first = false) {
					s.value[0] = gw_det_registry[d]->name;
					s.value[1] = gw_severity_name((enum gw_severity)v);
					s.n = base[d * 3 + v];
					fn(data, &s);
				}
			break;
		}
	}
}
