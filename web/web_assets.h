/*
 * web_assets: the web front end (web/src, uPlot from web/node_modules)
 * compiled into the binaries by web/embed.py, so an installed gradwatchd
 * serves its pages and `gradwatch report` writes a self-contained file
 * with no files beside them and no network.
 */
#ifndef GW_WEB_ASSETS_H
#define GW_WEB_ASSETS_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

struct gw_web_asset {
	const char *name;            /* "app.js", "uPlot.min.css", "index.html", ... */
	const char *ctype;           /* Content-Type; for the report blocks, their CSP hash */
	const unsigned char *data;   /* NUL-terminated */
	size_t len;
};

/* The files served under /static/NAME (and index.html as the page shell);
 * ends with an entry whose name is NULL. */
extern const struct gw_web_asset gw_web_assets[];

/* The report's inline script (uPlot + figures.js + app.js) and style sheet; `ctype`
 * holds "sha256-BASE64" of the data, for the CSP. */
extern const struct gw_web_asset gw_web_report_js;
extern const struct gw_web_asset gw_web_report_css;

/* The asset called name, or NULL. */
const struct gw_web_asset *gw_web_asset_find(const char *name, size_t len);

/* Write the self-contained report page to f: the shell, the inline style
 * and script, and `data` ({generated, files, runs:[...]}; see docs/web.md)
 * in a <script type="application/json"> element, with <, >, & and
 * U+2028/2029 escaped so no string in it can end the element or run as
 * script.  The page's CSP allows only the two inline blocks by hash.
 * Returns 0, -ENOMEM, or -EIO when f failed. */
int gw_web_write_report(FILE *f, const json_t *data);

#endif
