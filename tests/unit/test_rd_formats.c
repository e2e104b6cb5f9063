/*
 * Unit tests of every text format the readers know (readers/rd_*.c): llm.c,
 * Megatron, nanoGPT, ms-swift, the HF trainer state, fairseq, torchtitan,
 * composer/OLMo, torchtune, CSV, labelled ranks interleaved, and the real
 * logs of ../shared read in chunks.  Every input is fed twice, in one
 * piece and byte by byte, and must give the same points (rdtest.c).  The
 * framework itself: test_readers.c.
 */
#include "gwcheck.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdtest.h"
#include "reader.h"
#include "wire.h"

/* ---- formats ---------------------------------------------------------------- */

START_TEST(llmc_stdout)
{
	struct res r;
	read_str("| Parameter             | Value                                              |\n"
	         "val loss 11.007921\n"
	         "step    1/19560 | loss 11.009662 (+nanz)| norm 15.0789 (+nanz)| lr 8.57e-07 | "
	         "4230.95 ms | 31.9% bf16 MFU | 123917 tok/s\r\n"
	         "evaluating HellaSwag: 0/1256\revaluating HellaSwag: 10/1256\r"
	         "step    2/19560 | loss 10.9 (-0.53z)| norm 2.5 (+2.08z)| lr 1.71e-06 | 1 ms | 1% bf16 MFU | 2 tok/s\n"
	         "HellaSwag: 3059/10042 = 0.304621\n"
	         "Writing checkpoint at step 2\nWriting model to log124M/model_00000002.bin\n"
	         "Writing checkpoint at step 2\n"
	         "step    3/19560 | loss 3.329409 (+0.47z)| norm 0.2206 (-0.39z)| lError: Token out of vocabulary\n"
	         "r 4.52e-09 | 4285.08 ms | 31.5% bf16 MFU | 124130 tok/s\n"
	         "step 4/74: train loss 4.36 norm 2.1 lr 1e-4 (21.3 ms, 9000 tok/s)\n"
	         "step  902/19560 | loss     nan (+nanz)|slurmstepd: error: *** JOB 11672255 ON g084 "
	         "CANCELLED AT 2024-10-10T02:20:29 DUE TO TIME LIMIT ***",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "llmc");
	ck_assert_str_eq(r.g.text,
	                 "3 r 1 loss=11.009662 grad_norm=15.0789 lr=8.57e-07 "
	                 "throughput=123917 | loss_z=NaN norm_z=NaN step_ms=4230.95 mfu_pct=31.9 "
	                 "max_steps=19560\n"
	                 "4 r 2 loss=10.9 grad_norm=2.5 lr=1.71e-06 throughput=2 | "
	                 "loss_z=-0.53 norm_z=2.08 step_ms=1 mfu_pct=1 max_steps=19560\n"
	                 "6 r 2 event=checkpoint_saved\n"
	                 "9 r 3 loss=3.329409 grad_norm=0.2206 | "
	                 "loss_z=0.47 norm_z=-0.39 max_steps=19560\n"
	                 "11 r 4 loss=4.36 grad_norm=2.1 lr=0.0001 "
	                 "throughput=9000 | step_ms=21.3 max_steps=74\n"
	                 "12 r 902 loss=NaN | loss_z=NaN max_steps=19560\n");
	ck_assert_int_eq(r.g.errors, 0);
	free(r.g.text);
}
END_TEST

START_TEST(llmc_mainlog)
{
	struct res r;
	read_str("s:0 tel:11.0095\ns:0 trl:11.0116 lr:0.000001 norm:14.96\ns:1 trl:nan lr:0.000002 norm:15.18\n"
	         "s:250 eval:0.2437\ns:2 trl:x lr:1 norm:1\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "llmc");
	ck_assert_str_eq(r.g.text, "2 r 0 loss=11.0116 grad_norm=14.96 lr=1e-06\n"
	                           "3 r 1 loss=NaN grad_norm=15.18 lr=2e-06\n");
	ck_assert_int_eq(r.g.errors, 1);
	ck_assert_int_eq(r.g.errline[0], 5);
	ck_assert_str_eq(r.g.errmsg[0], "bad_value: field \"trl\" at column 9: expected a number");
	free(r.g.text);
}
END_TEST

START_TEST(megatron_lines)
{
	struct res r;
	read_str("------------------------ arguments ------------------------\n"
	         "  reset_iteration ................................. False\n"
	         "[Rank 43] (after 1 iterations) memory (MB) | allocated: 15492.8 | max allocated: 15492.8\n"
	         " iteration       10/    1000 | consumed samples:           40 | learning rate: 0.000E+00 | "
	         "loss scale: 8388608.0 | number of skipped iterations:  10 | number of nan iterations:   0 |\n"
	         " iteration       20/    1000 | lm loss: 1.210588E+01 | grad norm: nan | learning rate: 3.750E-05 |\n"
	         " validation loss at iteration 20 | lm loss value: 8.095942E+00 | lm loss PPL: 3.281128E+03 | \n"
	         "31:  [2026-08-18 03:13:09.974126] iteration        1/       2 | throughput per GPU "
	         "(TFLOP/s/GPU): 229.4 | lm loss: 1.217164E+01 | grad norm: 5.507 |\n"
	         "  successfully saved checkpoint at iteration       1 to /ckpt\n"
	         "  successfully saved checkpoint at iteration       1 to /ckpt\n"
	         "  successfully loaded checkpoint from /ckpt at iteration 1\n"
	         " iteration        2/       2 | lm loss: oops | grad norm: 5.568 |\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "megatron");
	ck_assert_str_eq(r.g.text,
	                 "4 r 10 lr=0 loss_scale=8388608 skipped=10 nan_iterations=0 | consumed_samples=40 "
	                 "max_steps=1000\n"
	                 "5 r 20 loss=12.10588 grad_norm=NaN lr=3.75e-05 | max_steps=1000\n"
	                 "7 r#2 1 [rank31] ts=1787022789.974126 loss=12.17164 grad_norm=5.507 | "
	                 "throughput_per_gpu_tflop_s_gpu=229.4 max_steps=2\n"
	                 "8 r#2 1 event=checkpoint_saved\n"
	                 "10 r#2 1 event=resumed checkpoint_step=1\n"
	                 "11 r#2 2 grad_norm=5.568 | max_steps=2\n");
	ck_assert_int_eq(r.g.errors, 1);
	ck_assert_int_eq(r.g.errline[0], 11);
	ck_assert_str_eq(r.g.errmsg[0], "bad_value: field \"lm_loss\" at column 41: expected a number");
	free(r.g.text);

	/* ms-swift launching Megatron: swift's banner does not decide */
	read_str("[INFO:swift] Start time of running main: 2026-04-24\n"
	         " iteration        1/     500 | lm loss: 1.263599E+01 | grad norm: 20.203 |\n", NULL, &r);
	ck_assert_str_eq(r.format, "megatron");
	ck_assert_int_eq(r.g.points, 1);
	free(r.g.text);
}
END_TEST

START_TEST(nanogpt_lines)
{
	struct res r;
	read_str("tokens per iteration will be: 512\n"
	         "step 0: train loss 4.2367, val loss 4.2475\n"
	         "iter 0: loss 4.2709, time 10268.08ms, mfu -100.00%\n"
	         "step 5: train loss 3.9, val loss 4.0\nsaving checkpoint to out-kirin\n"
	         "iter 5: loss nan, time 1431.27ms, mfu 0.01%\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "nanogpt");
	ck_assert_str_eq(r.g.text, "3 r 0 loss=4.2709 | time_ms=10268.08 mfu_pct=-100\n"
	                           "5 r 5 event=checkpoint_saved\n"
	                           "6 r 5 loss=NaN | time_ms=1431.27 mfu_pct=0.01\n");
	free(r.g.text);

	read_str("validation loss: 10.9522\nHellaSwag accuracy: 2497/10042=0.2487\n"
	         "step     0 | loss: 10.955010 | lr 6.0000e-04 | norm: 15.3420 | dt: 19152.47ms | tok/sec: 27374.43\n"
	         "rank 3 sample 0: Hello, I'm a language model, step 7 | loss: 1 | and more\n"
	         "step    10 | loss: 7.742049 | lr 6.0000e-04 | norm: 0.5005 | dt: 399.87ms | tok/sec: 1311151.86\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "nanogpt");
	ck_assert_str_eq(r.g.text, "3 r 0 loss=10.95501 grad_norm=15.342 lr=0.0006 "
	                           "throughput=27374.43 | dt_ms=19152.47\n"
	                           "5 r 10 loss=7.742049 grad_norm=0.5005 "
	                           "lr=0.0006 throughput=1311151.86 | dt_ms=399.87\n");
	free(r.g.text);

	/* log.txt, CRLF, no newline at the end */
	read_str("0 val 10.9519\r\n0 hella 0.2487\r\n0 train 10.955011\r\n1 train 10.935991\r\n2 train nan", NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "nanogpt");
	ck_assert_str_eq(r.g.text, "3 r 0 loss=10.955011\n4 r 1 loss=10.935991\n5 r 2 loss=NaN\n");
	free(r.g.text);
}
END_TEST

START_TEST(swift_lines)
{
	struct res r;
	read_str("{\"loss\": 20.53, \"grad_norm\": 52.2, \"learning_rate\": 0.0001, \"token_acc\": 0.0, "
	         "\"global_step/max_steps\": \"1/438\", \"elapsed_time\": \"6s\", \"train_speed(iter/s)\": 0.157}\n"
	         "{\"eval_loss\": 0.158, \"global_step/max_steps\": \"100/438\", \"train_speed(iter/s)\": 0.19}\n"
	         "{\"train_runtime\": 2959.8, \"train_loss\": 0.284, \"global_step/max_steps\": \"438/438\"}\n"
	         "{\"model_parameter_info\": \"x\", \"global_step\": 438, \"log_history\": [{\"loss\": 1.0, \"step\": 1}]}\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "swift");
	ck_assert_str_eq(r.g.text, "1 r 1 loss=20.53 grad_norm=52.2 lr=0.0001 "
	                           "throughput=0.157 | token_acc=0 max_steps=438\n");
	free(r.g.text);

	read_str("[INFO:swift] Using deepspeed: {'_description': \"User's config\", 'zero': {'stage': 3}}\n"
	         "Train:   1%|          | 3/294 [04:37<7:07:39, 88.18s/it]\r          \r\r"
	         "Train:   1%|          | 3/294 [04:37<7:07:39, 88.18s/it]{'loss': '1.759', 'grad_norm': '36.51', "
	         "'learning_rate': '4e-06', 'epoch': '0.0102', 'global_step/max_steps': '3/294', "
	         "'elapsed_time': '4m 37s', 'tokens_this_step': 25739}\r"
	         "Train:   1%|          | 4/294\n"
	         "{'loss': 'nan', 'grad_norm': '789.6', 'global_step/max_steps': '59/294'}\n"
	         "{'eval_loss': '1.2', 'global_step/max_steps': '60/294'}\n"
	         "{'train_runtime': '2.534e+04', 'train_loss': '1.218', 'global_step/max_steps': '294/294'}\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "swift");
	ck_assert_str_eq(r.g.text, "2 r 3 loss=1.759 grad_norm=36.51 "
	                           "lr=4e-06 | epoch=0.0102 max_steps=294 tokens_this_step=25739\n"
	                           "3 r 59 loss=NaN grad_norm=789.6 | max_steps=294\n");
	free(r.g.text);

	/* the plain HF Trainer prints no step: the dicts are numbered */
	read_str("{'loss': 0.4713, 'grad_norm': 1.93, 'learning_rate': 1e-05, 'epoch': 0.5}\n"
	         "{'eval_loss': 0.5, 'epoch': 0.5}\n"
	         "{'loss': 0.4, 'grad_norm': tensor(1.5, device='cuda:0'), 'learning_rate': 1e-05, 'epoch': 1.0}\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "swift");
	ck_assert_str_eq(r.g.text, "1 r 1 loss=0.4713 grad_norm=1.93 lr=1e-05 | epoch=0.5\n"
	                           "3 r 2 loss=0.4 lr=1e-05 | epoch=1\n");
	free(r.g.text);
}
END_TEST

static const char hf_doc[] =
	"{\r\n"
	"  \"best_metric\": null,\r\n"
	"  \"global_step\": 30,\r\n"
	"  \"log_history\": [\r\n"
	"    {\r\n"
	"      \"epoch\": 0.1,\r\n"
	"      \"grad_norm\": 0.601,\r\n"
	"      \"learning_rate\": 0.0002,\r\n"
	"      \"loss\": 2.2538,\r\n"
	"      \"step\": 10\r\n"
	"    },\r\n"
	"    {\r\n"
	"      \"grad_norm\": NaN,\r\n"
	"      \"lr\": 0.0001,\r\n"
	"      \"loss\": Infinity,\r\n"
	"      \"step\": 20\r\n"
	"    },\r\n"
	"    {\"eval_loss\": 1.93, \"epoch\": 0.5, \"step\": 20},\r\n"
	"    {\"loss\": 1.5, \"note\": \"a } in a string\", \"nested\": {\"a\": [1, 2]}, \"step\": 30},"
	" {\"loss\": 1.25}\r\n"
	"    ,{\r\n"
	"      \"step\": 30,\r\n"
	"      \"train_loss\": 2.01,\r\n"
	"      \"train_runtime\": 5230.1\r\n"
	"    }\r\n"
	"  ],\r\n"
	"  \"stateful_callbacks\": {\"log_history\": [{\"loss\": 9, \"step\": 99}]}\r\n"
	"}\r\n";

START_TEST(hf_state)
{
	struct res r;
	read_str(hf_doc, NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "hf_trainer_state");
	ck_assert_str_eq(r.g.text, "5 r 10 loss=2.2538 grad_norm=0.601 lr=0.0002 | epoch=0.1\n"
	                           "12 r 20 loss=Infinity grad_norm=NaN lr=0.0001\n"
	                           "19 r 30 loss=1.5\n");
	ck_assert_int_eq(r.g.errors, 1);
	ck_assert_int_eq(r.g.errline[0], 19);
	ck_assert_str_eq(r.g.errmsg[0], "missing_step: the log_history entry starting here has no \"step\"");
	free(r.g.text);

	/* cut inside an entry: the entries before it, and the cut named */
	const char *cut = strstr(hf_doc, "\"lr\": 0.0001");
	read_both(hf_doc, (size_t)(cut - hf_doc), NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_int_eq(r.g.points, 1);
	ck_assert_int_eq(r.g.errors, 1);
	ck_assert_int_eq(r.g.errline[0], 12);
	ck_assert_msg(strstr(r.g.errmsg[0], "truncated"), "%s", r.g.errmsg[0]);
	free(r.g.text);

	/* a step no int64_t holds is a bad step, not a cast out of range
	 * (undefined behaviour; float-cast-overflow in the sanitizer build) */
	read_str("{\"log_history\":[{\"loss\":1,\"step\":1e300},{\"loss\":2,\"step\":-1e300},"
	         "{\"loss\":3,\"step\":9.3e18},{\"loss\":4,\"step\":Infinity},{\"loss\":5,\"step\":3}],"
	         "\"global_step\":3}", NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.g.text, "1 r 3 loss=5\n");
	ck_assert_int_eq(r.g.errors, 4);
	free(r.g.text);
	read_str("{\"loss\": 1.5, \"step\": 1e300, \"global_step/max_steps\": \"7/9\"}\n"
	         "{\"loss\": 2.5, \"step\": 9.3e18, \"global_step/max_steps\": \"8/9\"}\n", "swift", &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.g.text, "1 r 7 loss=1.5 | max_steps=9\n2 r 8 loss=2.5 | max_steps=9\n");
	free(r.g.text);

	/* compact, on one line */
	read_str("{\"log_history\":[{\"loss\":1,\"step\":1},{\"loss\":2,\"step\":2}],\"global_step\":2}", NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "hf_trainer_state");
	ck_assert_str_eq(r.g.text, "1 r 1 loss=1\n1 r 2 loss=2\n");
	free(r.g.text);
}
END_TEST

START_TEST(other_frameworks)
{
	struct res r;
	/* fairseq: simple with a logging prefix, a tqdm redraw repeating its
	 * step, json with quoted numbers; the summary and validation skipped */
	read_str("2026-03-01 10:00:00 | INFO | fairseq_cli.train | task: TranslationTask\n"
	         "2026-03-01 10:00:04 | INFO | train_inner | epoch 001:    100 / 1563 loss=9.786, "
	         "nll_loss=9.576, wps=41234.5, num_updates=100, lr=1.25e-05, gnorm=2.105, clip=0%\n"
	         "epoch 001:  10%|#  | 200/1000 [00:30<04:30, 3.3it/s, loss=8.5, num_updates=200, gnorm=1.9]\r"
	         "epoch 001:  10%|#  | 200/1000 [00:31<04:30, 3.3it/s, loss=8.5, num_updates=200, gnorm=1.9]\n"
	         "2026-03-01 10:05:00 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 7.43 | num_updates 200\n"
	         "2026-03-01 10:05:00 | INFO | train | epoch 001 | loss 8.77 | num_updates 200 | gnorm 2.0\n"
	         "{\"epoch\": 2, \"update\": 1.06, \"loss\": \"7.786\", \"num_updates\": \"300\", \"gnorm\": \"1.7\"}\n"
	         "{\"epoch\": 2, \"valid_loss\": \"7.0\", \"valid_num_updates\": \"300\"}\n"
	         "epoch 002:  1 / 10 loss=oops, num_updates=301, gnorm=1.0",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "fairseq");
	ck_assert_str_eq(r.g.text,
	                 "2 r 100 ts=1772359204 loss=9.786 grad_norm=2.105 lr=1.25e-05 "
	                 "throughput=41234.5 | epoch=1 nll_loss=9.576 clip_pct=0\n"
	                 "3 r 200 loss=8.5 grad_norm=1.9 | epoch=1\n"
	                 "6 r 300 loss=7.786 grad_norm=1.7 | epoch=2 update=1.06\n"
	                 "8 r 301 grad_norm=1 | epoch=2\n");
	ck_assert_int_eq(r.g.errors, 1);
	ck_assert_str_eq(r.g.errmsg[0], "bad_value: field \"loss\" at column 25: expected a number");
	free(r.g.text);

	/* torchtitan: colours, a rank label, grouped digits, units; validation skipped */
	read_str("[rank0]:[titan] 2026-05-18 16:04:40,002 - root - INFO - Training starts at step 1.\n"
	         "[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - \x1b[31mstep: 14  \x1b[32mloss:  3.24405  "
	         "\x1b[33mgrad_norm:  0.8319  \x1b[38;2;180;60;0mmemory:  9.46GiB(64.99%)  \x1b[34mtps: 7,282  "
	         "\x1b[35mmfu: 0.17%\x1b[39m\n"
	         "[rank0]:[titan] 2026-05-18 16:04:47,338 - root - INFO - validate step: 15  loss:  3.3\n"
	         "[titan] - root - INFO - step: 15  loss:  nan  grad_norm:  x\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "torchtitan");
	ck_assert_str_eq(r.g.text,
	                 "2 r 14 [rank0] ts=1779120286.338 loss=3.24405 grad_norm=0.8319 throughput=7282 | "
	                 "memory_gib=9.46 memory_pct=64.99 mfu_pct=0.17\n"
	                 "4 r 15 loss=NaN\n");
	ck_assert_int_eq(r.g.errors, 1);
	ck_assert_str_eq(r.g.errmsg[0], "bad_value: field \"grad_norm\" at column 59: expected a number");
	free(r.g.text);

	/* Composer: blocks end at the next unindented line or the input's end;
	 * Eval lines skipped */
	read_str("[batch=1/3]:\n\t Train epoch: 0\n\t Train loss/train/total: 12.0570\n"
	         "\t Train l2_norm/grad/global: 3.5\n\t Train lr-DecoupledAdamW/group0: 0.0000\n"
	         "[Eval batch=1/320] Eval on eval data\n\t Eval metrics/eval/LanguageCrossEntropy: 9\n"
	         "[epoch=1][batch=2/3]:\n\t Train loss/train/total: 11.5\n\t Eval x: 1\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "composer");
	ck_assert_str_eq(r.g.text, "1 r 1 loss=12.057 grad_norm=3.5 lr=0 | max_steps=3 epoch=0\n"
	                           "8 r 2 loss=11.5 | max_steps=3\n");
	free(r.g.text);

	/* OLMo: a logging prefix, grouped digits, OLMo-core names, metrics on
	 * the header's line, a block whose lines lost their indent to a label */
	read_str("2024-01-01 00:00:00.000\thost:0\tolmo.train:900\tINFO\t[step=10/739328]\n"
	         "    train/CrossEntropyLoss=10.21\n    train/Perplexity=27,465\n"
	         "    optim/total_grad_norm=1.5\n"
	         "[step=11/739328,epoch=0] train/CE loss=10.1, optim/total grad norm=1.4\n"
	         "[rank0]:[step=12/739328]\n[rank0]:    train/CE loss=10.0\n[rank0]:    optim/LR (group 0)=0.0004\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "composer");
	ck_assert_str_eq(r.g.text, "1 r 10 ts=1704067200 loss=10.21 grad_norm=1.5 | max_steps=739328 "
	                           "train/Perplexity=27465\n"
	                           "5 r 11 loss=10.1 grad_norm=1.4 | max_steps=739328\n"
	                           "6 r 12 [rank0] loss=10 lr=0.0004 | max_steps=739328\n");
	free(r.g.text);

	/* every line labelled: the label took the indentation */
	read_str("[rank0]:[step=12/100]\n[rank0]:    train/CE loss=10.0\n[rank0]:    optim/LR (group 0)=0.0004\n"
	         "[rank0]:[step=13/100]\n[rank0]:    train/CE loss=9.0\n",
	         NULL, &r);
	ck_assert_str_eq(r.format, "composer");
	ck_assert_str_eq(r.g.text, "1 r 12 [rank0] loss=10 lr=0.0004 | max_steps=100\n"
	                           "4 r 13 [rank0] loss=9 | max_steps=100\n");
	free(r.g.text);

	/* torchtune: the metric log and the bar, redrawn */
	read_str("Step 1 | loss:2.3101 lr:2e-05 tokens_per_second_per_gpu:1234.5 grad_norm:1.2031 \n"
	         "1|2|Loss: 2.25:   0%|  | 2/1000 [00:12<19:49,  1.20s/it]\r1|2|Loss: 2.25:   0%|  | 2/1000 [00:13<19:49]\r"
	         "1|3|Loss: 2.2:   0%|  | 3/1000 [00:14<19:49,  1.20s/it]\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "torchtune");
	ck_assert_str_eq(r.g.text, "1 r 1 loss=2.3101 grad_norm=1.2031 lr=2e-05 throughput=1234.5\n"
	                           "2 r 2 loss=2.25 | epoch=1\n2 r 3 loss=2.2 | epoch=1\n");
	free(r.g.text);

	/* csv: Keras' CSVLogger (epoch steps, NA), a header repeated by a restart */
	read_str("epoch,accuracy,learning_rate,loss,val_loss\r\n0,0.5,0.001,1.2,1.1\r\n1,0.6,0.001,0.9,NA\r\n"
	         "epoch,accuracy,learning_rate,loss,val_loss\r\n0,0.4,0.001,1.3,",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "csv");
	ck_assert_str_eq(r.g.text, "2 r 0 loss=1.2 lr=0.001 | accuracy=0.5 val_loss=1.1\n"
	                           "3 r 1 loss=0.9 lr=0.001 | accuracy=0.6\n"
	                           "5 r#2 0 loss=1.3 lr=0.001 | accuracy=0.4\n");
	ck_assert_int_eq(r.g.errors, 0);
	free(r.g.text);
	/* a Lightning metrics.csv stays Lightning's */
	read_str("epoch,step,train_loss\n0,9,1.5\n", NULL, &r);
	ck_assert_str_eq(r.format, "lightning_csv");
	free(r.g.text);
}
END_TEST

/* Each stream format's lines with rank labels ("[rank3]:", srun's " 3: "),
 * two ranks interleaved line by line (as a launcher merges them): every
 * point keeps its rank, and a rank's point at the step another rank just
 * printed is its own, not a progress bar redrawn. */
START_TEST(labelled_ranks_interleaved)
{
	static const struct {
		const char *format, *line0, *line3, *want;
	} cases[] = {
		{"fairseq",
		 "[rank0]:2026-03-01 10:00:04 | INFO | train_inner | epoch 001:    100 / 1563 loss=9.786, num_updates=100\n",
		 "[rank3]:2026-03-01 10:00:04 | INFO | train_inner | epoch 001:    100 / 1563 loss=9.9, num_updates=100\n",
		 "1 r 100 [rank0] ts=1772359204 loss=9.786 | epoch=1\n"
		 "2 r 100 [rank3] ts=1772359204 loss=9.9 | epoch=1\n"},
		{"fairseq",
		 " 0: {\"epoch\": 1, \"loss\": \"7.786\", \"num_updates\": \"300\"}\n",
		 " 3: {\"epoch\": 1, \"loss\": \"7.9\", \"num_updates\": \"300\"}\n",
		 "1 r 300 [rank0] loss=7.786 | epoch=1\n2 r 300 [rank3] loss=7.9 | epoch=1\n"},
		{"torchtitan",
		 "[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.24405\n",
		 "[rank3]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.3\n",
		 "1 r 14 [rank0] ts=1779120286.338 loss=3.24405\n"
		 "2 r 14 [rank3] ts=1779120286.338 loss=3.3\n"},
		{"torchtune",
		 " 0: 1|2|Loss: 2.25:   0%|  | 2/1000 [00:12<19:49,  1.20s/it]\n",
		 " 3: 1|2|Loss: 2.3:   0%|  | 2/1000 [00:12<19:49,  1.20s/it]\n",
		 "1 r 2 [rank0] loss=2.25 | epoch=1\n2 r 2 [rank3] loss=2.3 | epoch=1\n"},
		{"torchtune",
		 "[rank0]:Step 1 | loss:2.3101\n", "[rank3]:Step 1 | loss:2.4\n",
		 "1 r 1 [rank0] loss=2.3101\n2 r 1 [rank3] loss=2.4\n"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char in[1024];
		snprintf(in, sizeof(in), "%s%s", cases[i].line0, cases[i].line3);
		struct res r;
		read_str(in, cases[i].format, &r);
		ck_assert_int_eq(r.rc, 0);
		ck_assert_msg(!strcmp(r.g.text, cases[i].want), "%s case %zu:\n%s", cases[i].format, i,
		              r.g.text);
		free(r.g.text);
	}
}
END_TEST

/* The real text logs of ../shared/realworld, whole and in chunks of
 * changing odd sizes (1 byte at first, so every boundary is crossed): the
 * same points, the same errors, the same format. */
START_TEST(real_logs_in_chunks)
{
	const char *shared = getenv("GW_SHARED");
	static const char *const files[] = {
		"realworld/raw/llmc-gpt2-124m-hector-nan.log",
		"realworld/raw/llmc-gpt2-124m-siddanth.main.log",
		"realworld/raw/hf-kevin-compressor-1000.trainer_state.json",
		"realworld/raw/bs-gpt2-meg-n8-tp4-pp8.out",
		"realworld/raw/swift-deepclima-qwen3-8b-lora.logging.jsonl",
		"realworld/raw-more/megatron-core-llama3-1b-ranked.out",
		"realworld/raw-more/swift-stdout-gemma4-ds-zero3.log",
		"realworld/raw-more/nanogpt-shakespeare-char-nan.train.log",
		"realworld/raw-more/buildnanogpt-124m-2.5ep-killed.log.txt",
		"realworld/raw-more/hf-gemma3-1b-ckpt2000.trainer_state.json",
		NULL,
	};
	if (!shared)
		return; /* run outside meson: no ../shared */
	static const size_t sizes[] = {1, 7, 333, 4093, 65521};
	for (size_t i = 0; files[i]; i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", shared, files[i]);
		FILE *f = fopen(path, "rb");
		ck_assert_msg(f != NULL, "%s", path);
		fseek(f, 0, SEEK_END);
		size_t n = (size_t)ftell(f);
		fseek(f, 0, SEEK_SET);
		char *buf = malloc(n);
		ck_assert_int_eq(fread(buf, 1, n, f), n);
		fclose(f);

		struct res whole, parts;
		read_with(buf, n, 0, NULL, &whole);
		ck_assert_msg(whole.rc == 0 && whole.g.points > 0, "%s: %s", path, whole.err);
		memset(&parts, 0, sizeof(parts));
		struct gw_reader_opts o = {.aliases = aliases, .run = "r"};
		struct gw_reader_sink sk = {.data = &parts.g, .on_rec = on_rec, .on_error = on_error};
		struct gw_reader *r;
		char err[256];
		ck_assert_int_eq(gw_reader_new(&o, &sk, &r, err, sizeof(err)), 0);
		size_t off = 0, k = 0;
		while (off < n) {
			size_t c = off < 70000 ? 1 : sizes[k++ % 5];
			if (c > n - off)
				c = n - off;
			ck_assert_int_eq(gw_reader_feed(r, buf + off, c), 0);
			off += c;
			/* the consumed offset only ever ends a complete line */
			uint64_t cons = gw_reader_consumed(r);
			ck_assert(cons <= off);
			ck_assert(cons == 0 || buf[cons - 1] == '\n');
		}
		ck_assert_int_eq(gw_reader_finish(r), 0);
		ck_assert_str_eq(gw_reader_format(r)->name, whole.format);
		ck_assert_int_eq(gw_reader_lines(r), whole.lines);
		gw_reader_free(r);
		ck_assert_int_eq(parts.g.errors, whole.g.errors);
		ck_assert_int_eq(parts.g.points, whole.g.points);
		ck_assert_msg(!strcmp(parts.g.text, whole.g.text), "%s: different points", path);
		free(whole.g.text);
		free(parts.g.text);
		free(buf);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rd_formats");
	TCase *t = tcase_create("formats");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, llmc_stdout);
	tcase_add_test(t, llmc_mainlog);
	tcase_add_test(t, megatron_lines);
	tcase_add_test(t, nanogpt_lines);
	tcase_add_test(t, swift_lines);
	tcase_add_test(t, hf_state);
	tcase_add_test(t, other_frameworks);
	tcase_add_test(t, labelled_ranks_interleaved);
	tcase_set_timeout(t, 300);
	tcase_add_test(t, real_logs_in_chunks);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return rd_main(suite());
}
