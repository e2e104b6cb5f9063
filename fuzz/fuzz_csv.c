/*
 * Fuzz target: the CSV readers (readers/rd_csv.c over libcsv): each input
 * is read as a Lightning metrics.csv and as a W&B panel export, each once
 * in one feed and once in random chunks.  Seeds: fuzz/corpus/csv/.
 */
#include "fuzz_reader.h"

static struct gw_alias *aliases;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	aliases = gw_alias_new();
	return aliases ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_both(aliases, "lightning_csv", false, data, size);
	fuzz_both(aliases, "wandb_csv", false, data, size);
	return 0;
}
