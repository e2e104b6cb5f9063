/*
 * Fuzz target: logs as people paste them and the lines every framework
 * prints alike (readers/rd_line.c, rd_events.c, rd_plain.c and the pasted
 * forms of nanogpt, fairseq, megatron and csv, and rd_yolo.c, rd_tfod.c,
 * rd_sb3.c, rd_darknet.c): quote markers and code fences, logger prefixes
 * and their times, overflow and checkpoint lines, Megatron records wrapped
 * over lines, name/value lines, Keras bars, CSV text columns, YOLO epoch
 * tables, the TF OD API's loss dicts, SB3's boxed tables, Darknet's
 * iteration lines, OpenNMT's, MXNet's and ESPnet2's lines.  Each input is
 * read sniffed and as text, megatron, nanogpt, fairseq, csv, ultralytics,
 * tf_objdet, sb3 and darknet, in one feed and in random chunks (which must agree),
 * read to its end and followed.  Seeds: fuzz/corpus/paste/.
 */
#include "fuzz_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const formats[] = {
		NULL, "text", "megatron", "nanogpt", "fairseq", "csv", "ultralytics", "tf_objdet", "sb3",
		"darknet",
	};
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		fuzz_both(formats[i], false, data, size);
		fuzz_both(formats[i], true, data, size);
	}
	return 0;
}
