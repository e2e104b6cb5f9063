/*
 * report_page: the offline report's HTML (see web_assets.h).  The page is
 * the same front end gradwatchd serves, inlined: a style block, the data
 * as inert JSON, one script block.  Its Content-Security-Policy allows
 * exactly those two blocks by their sha256 (computed at build time by
 * embed.py) and nothing else: no network, no other script, so nothing in
 * the data can ever execute even if an escape were missed.
 */
#include "web_assets.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const struct gw_web_asset *gw_web_asset_find(const char *name, size_t len)
{
	for (const struct gw_web_asset *a = gw_web_assets; a->name; a++)
		if (strlen(a->name) == len && memcmp(a->name, name, len) == 0)
			return a;
	return NULL;
}

/* JSON text made safe inside <script type="application/json">: the
 * characters that could close the element or start a comment, and the two
 * line separators old parsers treat as newlines, as \u escapes (only
 * strings can hold them, where the escape means the same). */
static int write_json_escaped(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '<')
			fputs("\\u003c", f);
		else if (*p == '>')
			fputs("\\u003e", f);
		else if (*p == '&')
			fputs("\\u0026", f);
		else if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
			fputs(p[2] == 0xa8 ? "\\u2028" : "\\u2029", f);
			p += 2;
		} else
			fputc(*p, f);
	}
	return 0;
}

int gw_web_write_report(FILE *f, const json_t *data)
{
	char *json = json_dumps(data, JSON_COMPACT | JSON_REAL_PRECISION(12));
	if (!json)
		return -ENOMEM;
	fprintf(f,
	        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	        "script-src '%s'; style-src '%s'; img-src data:; base-uri 'none'; form-action 'none'\">\n"
	        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	        "<meta name=\"generator\" content=\"gradwatch report\">\n"
	        "<title>gradwatch report</title>\n<style>",
	        gw_web_report_js.ctype, gw_web_report_css.ctype);
	fwrite(gw_web_report_css.data, 1, gw_web_report_css.len, f);
	fputs("</style>\n</head>\n<body>\n<div id=\"app\"></div>\n"
	      "<script type=\"application/json\" id=\"gw-data\">", f);
	write_json_escaped(f, json);
	free(json);
	fputs("</script>\n<script>", f);
	fwrite(gw_web_report_js.data, 1, gw_web_report_js.len, f);
	fputs("</script>\n</body>\n</html>\n", f);
	return ferror(f) ? -EIO : 0;
}
