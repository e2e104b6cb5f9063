/*
 * Fuzz target: the text readers of other frameworks' stdout
 * (readers/rd_fairseq.c, rd_titan.c, rd_composer.c, rd_torchtune.c): each
 * input is read as each of them, once in one feed and once in random
 * chunks, as a file and as a followed one.  Seeds: fuzz/corpus/text/.
 */
#include "fuzz_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const formats[] = {"fairseq", "torchtitan", "composer", "torchtune"};
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		fuzz_both(formats[i], i & 1, data, size);
	return 0;
}
