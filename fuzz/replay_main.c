/*
 * A main() for the fuzz targets without libFuzzer: runs the target once on
 * every file named on the command line (directories: every file in them).
 * The meson build uses it to keep the harnesses compiling and to replay the
 * committed seeds (and any crash reproducer added to them) as a plain test,
 * under the sanitizers in the sanitizer build.  fuzz/run.sh is the real
 * fuzzing.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

/* optional, as with libFuzzer */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	char *buf;
	size_t len;
	int rc = gw_read_file(path, SIZE_MAX, &buf, &len);
	if (rc < 0) {
		fprintf(stderr, "%s: cannot read (%d)\n", path, rc);
		return 1;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int bad = 0, files = 0;
	if (LLVMFuzzerInitialize && LLVMFuzzerInitialize(&argc, &argv) != 0)
		return 1;
	for (int i = 1; i < argc; i++) {
		struct stat sb;
		if (stat(argv[i], &sb) != 0) {
			fprintf(stderr, "%s: not found\n", argv[i]);
			return 1;
		}
		if (!S_ISDIR(sb.st_mode)) {
			bad |= run_file(argv[i]);
			files++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char p[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
			bad |= run_file(p);
			files++;
		}
		if (d)
			closedir(d);
	}
	printf("%d input(s)\n", files);
	return bad || !files;
}
