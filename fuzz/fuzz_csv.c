/*
 * Fuzz target: the CSV readers (readers/rd_csv.c over libcsv): each input
 * is read as a Lightning metrics.csv, as a W&B panel export and as a plain
 * metrics CSV (followed, as that one may be), each once
 * in one feed and once in random chunks.  Seeds: fuzz/corpus/csv/.
 */
#include "fuzz_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_both("lightning_csv", false, data, size);
	fuzz_both("wandb_csv", false, data, size);
	fuzz_both("csv", true, data, size);
	return 0;
}
