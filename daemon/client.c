/*
 * client: send, runs, alerts (see client.h).
 */
#include "client.h"

#include <stdio.h>

int gw_client_send(struct gw_cfg *cfg, int argc, char **argv)
{
	fprintf(stderr, "gradwatch send: not implemented yet\n");
	return 2;
}

int gw_client_runs(struct gw_cfg *cfg, int argc, char **argv)
{
	fprintf(stderr, "gradwatch runs: not implemented yet\n");
	return 2;
}

int gw_client_alerts(struct gw_cfg *cfg, int argc, char **argv)
{
	fprintf(stderr, "gradwatch alerts: not implemented yet\n");
	return 2;
}
