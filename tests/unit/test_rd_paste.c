/*
 * Unit tests of what the readers make of logs as people paste them
 * (readers/rd_line.c, rd_plain*.c and the pasted forms of issue 19 in the
 * framework readers): quote markers and code fences, a logger's prefix
 * and the time it names, the text format's forms, tables, wrapped
 * records.  Each case holds the exact lines of its source where one is
 * named.  Every input is read in one piece and byte by byte (rdtest.h).
 * The overflow and checkpoint lines are test_rd_events.c's.
 */
#include "gwcheck.h"

#include <stdlib.h>
#include <string.h>

#include "rdtest.h"

/* ---- pasted forms ------------------------------------------------------ */

/* Quote markers (GitHub's "> ", nested in a reply) and code fences around
 * a framework's lines: the lines read as the framework's, the fences
 * skipped. */
START_TEST(quoted_and_fenced)
{
	static const struct form c[] = {
		{"quoted llm.c",
		 "> ```\n"
		 "> step    1/19560 | loss 11.009662 (+nanz)| norm 15.0789 (+nanz)| lr 8.57e-07 | "
		 "4230.95 ms | 31.9% bf16 MFU | 123917 tok/s\n"
		 "> step    2/19560 | loss 10.941217 (-0.53z)| norm 12.4473 (+2.08z)| lr 1.71e-06 | "
		 "4148.21 ms | 32.6% bf16 MFU | 126386 tok/s\n"
		 "> ```\n",
		 "llmc",
		 "2 r 1 loss=11.009662 grad_norm=15.0789 lr=8.57e-07 throughput=123917 | loss_z=NaN "
		 "norm_z=NaN step_ms=4230.95 mfu_pct=31.9 max_steps=19560\n"
		 "3 r 2 loss=10.941217 grad_norm=12.4473 lr=1.71e-06 throughput=126386 | loss_z=-0.53 "
		 "norm_z=2.08 step_ms=4148.21 mfu_pct=32.6 max_steps=19560\n"},
		{"nested quote, fence with a language",
		 "> > ```text\n"
		 "> > iter 420: loss 3.5012, time 1440.31ms, mfu 0.01%\n"
		 "> > iter 425: loss nan, time 1440.31ms, mfu 0.01%\n"
		 "> > ```\n",
		 "nanogpt",
		 "2 r 420 loss=3.5012 | time_ms=1440.31 mfu_pct=0.01\n"
		 "3 r 425 loss=NaN | time_ms=1440.31 mfu_pct=0.01\n"},
	};
	forms(c, sizeof(c) / sizeof(c[0]));
}
END_TEST

/* A timestamp and a logger's prefix before each line: the line reads as
 * its framework's, and its time is the point's ts. */
START_TEST(prefixed_lines)
{
	static const struct form c[] = {
		{"nanoGPT with a timestamp",
		 "2023-03-22 09:30:39 iter 0: loss 10.9878, time 31506.24ms, mfu -100.00%\n"
		 "2023-03-22 09:30:40 iter 10: loss 9.7093, time 132.91ms, mfu 1.12%\n",
		 "nanogpt",
		 "1 r 0 ts=1679477439 loss=10.9878 | time_ms=31506.24 mfu_pct=-100\n"
		 "2 r 10 ts=1679477440 loss=9.7093 | time_ms=132.91 mfu_pct=1.12\n"},
		{"build-nanoGPT under Python logging's default and a rank label",
		 "[rank0]:INFO:root:step     0 | loss: 10.955 | lr 6.0000e-06 | norm: 15.4 | dt: 401.22ms | "
		 "tok/sec: 1306830.22\n"
		 "[rank0]:INFO:root:step     1 | loss: 10.12 | lr 1.2000e-05 | norm: 9.4 | dt: 400.00ms | "
		 "tok/sec: 1310720.00\n",
		 "nanogpt",
		 "1 r 0 [rank0] loss=10.955 grad_norm=15.4 lr=6e-06 throughput=1306830.22 | dt_ms=401.22\n"
		 "2 r 1 [rank0] loss=10.12 grad_norm=9.4 lr=1.2e-05 throughput=1310720 | dt_ms=400\n"},
		{"a script's prints through loguru",
		 "2023-08-02 00:41:17.458 | INFO     | __main__:log_dist:54 - [Rank 0] step=10, loss=2.5, "
		 "grad_norm=0.9\n"
		 "2023-08-02 00:41:27.458 | INFO     | __main__:log_dist:54 - [Rank 0] step=20, loss=2.4, "
		 "grad_norm=0.8\n",
		 "text",
		 "1 r 10 ts=1690936877.458 loss=2.5 grad_norm=0.9 | rank=0\n"
		 "2 r 20 ts=1690936887.458 loss=2.4 grad_norm=0.8 | rank=0\n"},
		{"HF examples' month-first time, [train] tag",
		 "05/10/2023 11:22:33 - INFO - __main__ - [train] step: 100, loss: 2.345, lr: 3e-4\n"
		 "05/10/2023 11:22:43 - INFO - __main__ - [train] step: 110, loss: 2.301, lr: 3e-4\n",
		 "text",
		 "1 r 100 ts=1683717753 loss=2.345 lr=0.0003\n"
		 "2 r 110 ts=1683717763 loss=2.301 lr=0.0003\n"},
	};
	forms(c, sizeof(c) / sizeof(c[0]));
}
END_TEST

/* The text format's forms: bare STEP: LOSS / STEP LOSS columns, a script's
 * name/value prints (a per-epoch step made global), Keras' bar and epoch
 * lines, speechbrain's epoch lines; evaluation lines skipped. */
START_TEST(text_forms)
{
	static const struct form c[] = {
		{"STEP: LOSS",
		 "1200: 2.7431\n1210: 2.7402\n1220: 4.4150\n1230: 4.3987\n",
		 "text",
		 "1 r 1200 loss=2.7431\n2 r 1210 loss=2.7402\n3 r 1220 loss=4.415\n"
		 "4 r 1230 loss=4.3987\n"},
		{"STEP LOSS",
		 "100 2.31\n200 2.25\n300 2.20\n",
		 "text", "1 r 100 loss=2.31\n2 r 200 loss=2.25\n3 r 300 loss=2.2\n"},
		{"PyTorch tutorial: a per-epoch step",
		 "Epoch [1/5], Step [100/600], Loss: 0.2243\n"
		 "Epoch [1/5], Step [600/600], Loss: 0.1025\n"
		 "Epoch [2/5], Step [100/600], Loss: 0.0982\n",
		 "text",
		 "1 r 100 loss=0.2243 | epoch=1\n2 r 600 loss=0.1025 | epoch=1\n"
		 "3 r 700 loss=0.0982 | epoch=2\n"},
		{"PyTorch MNIST example, evaluation skipped",
		 "Train Epoch: 1 [0/60000 (0%)]\tLoss: 2.305726\n"
		 "Train Epoch: 1 [59520/60000 (99%)]\tLoss: 0.018564\n"
		 "Test set: Average loss: 0.0471, Accuracy: 9844/10000 (98%)\n"
		 "Train Epoch: 2 [0/60000 (0%)]\tLoss: 0.023116\n",
		 "text",
		 "1 r 0 loss=2.305726 | train_epoch=1\n2 r 59520 loss=0.018564 | train_epoch=1\n"
		 "4 r 60000 loss=0.023116 | train_epoch=2\n"},
		{"Keras bars: the step is the batch counted over epochs",
		 "Epoch 1/200\n"
		 "123/500 [====>.........................] - ETA: 1:23 - loss: 0.6931 - accuracy: 0.5012\n"
		 "500/500 [==============================] - 12s 24ms/step - loss: 0.6902 - accuracy: "
		 "0.5230 - val_loss: 0.6889 - val_accuracy: 0.5350\n"
		 "Epoch 2/200\n"
		 "500/500 [==============================] - 11s 22ms/step - loss: 0.6710 - accuracy: "
		 "0.5801 - val_loss: 0.6650 - val_accuracy: 0.5900\n",
		 "text",
		 "2 r 123 loss=0.6931 | accuracy=0.5012\n"
		 "3 r 500 loss=0.6902 | accuracy=0.523 val_loss=0.6889 val_accuracy=0.535\n"
		 "5 r 1000 loss=0.671 | accuracy=0.5801 val_loss=0.665 val_accuracy=0.59\n"},
		{"Keras redraws with \\b and \\r",
		 "Epoch 3/200\n"
		 " 1/10 [==>...] - ETA: 0s - loss: 0.70\b\b\b\b\b 2/10 [====>.] - ETA: 0s - "
		 "loss: 0.69\r10/10 [======] - 0s 1ms/step - loss: 0.68\n",
		 "text",
		 "2 r 1 loss=0.7 | eta_s=0\n2 r 2 loss=0.69 | eta_s=0\n2 r 10 loss=0.68\n"},
		{"an epoch per line (Keras verbose=2 joined, a script's summary)",
		 "Epoch 3/200 - 2s - loss: 0.6931 - accuracy: 0.5000\n"
		 "Epoch 4/200 - Train Loss: 0.6800, Val Loss: 0.6900, LR: 0.000100\n",
		 "text",
		 "1 r 3 loss=0.6931 | epoch=3 accuracy=0.5\n"
		 "2 r 4 loss=0.68 lr=0.0001 | epoch=4 val_loss=0.69\n"},
		{"speechbrain's train_log.txt",
		 "epoch: 1, lr: 1.00e+00 - train loss: 2.71 - valid loss: 2.50, valid error: 8.10e-01\n"
		 "epoch: 2, lr: 1.00e+00 - train loss: 2.11 - valid loss: 2.03, valid error: 6.46e-01\n",
		 "text",
		 "1 r 1 loss=2.71 lr=1 | epoch=1 valid_loss=2.5 valid_error=0.81\n"
		 "2 r 2 loss=2.11 lr=1 | epoch=2 valid_loss=2.03 valid_error=0.646\n"},
	};
	forms(c, sizeof(c) / sizeof(c[0]));
}
END_TEST

/* Framework forms the readers did not take before: nanochat's stdout,
 * fairseq <= 0.9's lines, a Megatron record hard-wrapped by an issue box. */
START_TEST(framework_forms)
{
	static const struct form c[] = {
		{"nanochat, base_train.py's print0 (a NaN loss, grouped digits)",
		 "step 00005/21400 (0.02%) | loss: 10.231754 | lrm: 1.00 | dt: 1234.56ms | tok/sec: "
		 "424,913 | mfu: 45.67 | total time: 0.05m\n"
		 "step 00006/21400 (0.03%) | loss: nan | lrm: 1.00 | dt: 1235.01ms | tok/sec: 424,758 | "
		 "mfu: 45.65 | total time: 0.07m\n",
		 "nanogpt",
		 "1 r 5 loss=10.231754 throughput=424913 | lrm=1 dt_ms=1234.56 mfu=45.67 "
		 "total_time_m=0.05 max_steps=21400\n"
		 "2 r 6 loss=NaN throughput=424758 | lrm=1 dt_ms=1235.01 mfu=45.65 total_time_m=0.07 "
		 "max_steps=21400\n"},
		{"nanochat with its grad norm",
		 "step 00000/21400 (0.00%) | loss: 11.090355 | grad norm: 2.4103 | lrm: 1.00 | dt: "
		 "30812.11ms | tok/sec: 17,014 | mfu: 1.01 | total time: 0.00m\n",
		 "nanogpt",
		 "1 r 0 loss=11.090355 grad_norm=2.4103 throughput=17014 | lrm=1 dt_ms=30812.11 mfu=1.01 "
		 "total_time_m=0 max_steps=21400\n"},
		{"fairseq <= 0.9: epoch summaries only, the scale collapsing",
		 "| epoch 005 | loss 6.912 | nll_loss 5.580 | ppl 47.84 | wps 12020 | ups 4 | wpb 3024.6 "
		 "| bsz 102.6 | num_updates 3100 | lr 0.0005 | gnorm 0.412 | clip 0.000 | oom 0.000 | "
		 "loss_scale 0.125 | wall 1212 | train_wall 1050\n"
		 "| epoch 005 | valid on 'valid' subset | loss 6.812 | nll_loss 5.421 | ppl 42.84 | "
		 "num_updates 3100\n"
		 "| WARNING: overflow detected, setting loss scale to: 0.0625\n"
		 "| epoch 006 | loss 6.628 | nll_loss 5.312 | ppl 39.73 | wps 12005 | ups 4 | wpb 3024.6 "
		 "| bsz 102.6 | num_updates 3725 | lr 0.0005 | gnorm 0.361 | clip 0.000 | oom 0.000 | "
		 "loss_scale 0.000 | wall 1453 | train_wall 1262\n",
		 "fairseq",
		 "1 r 3100 loss=6.912 grad_norm=0.412 lr=0.0005 throughput=12020 loss_scale=0.125 | "
		 "epoch=5 nll_loss=5.58 ppl=47.84 ups=4 wpb=3024.6 bsz=102.6 clip=0 oom=0 wall=1212 "
		 "train_wall=1050\n"
		 "3 r 3101 event=overflow loss_scale=0.0625\n"
		 "4 r 3725 loss=6.628 grad_norm=0.361 lr=0.0005 throughput=12005 loss_scale=0 | "
		 "epoch=6 nll_loss=5.312 ppl=39.73 ups=4 wpb=3024.6 bsz=102.6 clip=0 oom=0 wall=1453 "
		 "train_wall=1262\n"},
		{"fairseq <= 0.9: progress lines; the summary beside them skipped",
		 "| epoch 001:    100 / 1563 loss=9.786, nll_loss=9.576, ppl=763.47, wps=41234, ups=3, "
		 "wpb=12876.3, bsz=402.4, num_updates=100, lr=1.25e-05, gnorm=2.105, clip=0.000, "
		 "oom=0.000, loss_scale=128.000, wall=33, train_wall=31\n"
		 "| epoch 001 | loss 8.770 | num_updates 1563 | gnorm 2.000\n",
		 "fairseq",
		 "1 r 100 loss=9.786 grad_norm=2.105 lr=1.25e-05 throughput=41234 loss_scale=128 | "
		 "epoch=1 nll_loss=9.576 ppl=763.47 ups=3 wpb=12876.3 bsz=402.4 clip=0 oom=0 wall=33 "
		 "train_wall=31\n"},
		{"a Megatron record wrapped over three lines",
		 " iteration       30/    1000 | consumed samples: 120 | elapsed time per iteration (ms): 1613.7 |\n"
		 " learning rate: 1.500E-04 | global batch size: 4 | lm loss: 2.648119E+01 | loss scale: 16384.0 |\n"
		 " grad norm: 67.033 | number of skipped iterations: 1 | number of nan iterations: 0 |\n"
		 " iteration       40/    1000 | consumed samples: 160 | elapsed time per iteration (ms): 1600.1 |"
		 " learning rate: 2.000E-04 | global batch size: 4 | lm loss: 2.512E+01 |\n"
		 "time (ms) | forward-compute: 800.2 | backward-compute: 700.1\n",
		 "megatron",
		 "1 r 30 loss=26.48119 grad_norm=67.033 lr=0.00015 loss_scale=16384 skipped=1 "
		 "nan_iterations=0 | consumed_samples=120 elapsed_time_per_iteration_ms=1613.7 "
		 "global_batch_size=4 max_steps=1000\n"
		 "4 r 40 loss=25.12 lr=0.0002 | consumed_samples=160 elapsed_time_per_iteration_ms=1600.1 "
		 "global_batch_size=4 max_steps=1000\n"},
		{"a Megatron record wrapped in the middle of a field name",
		 " iteration      100/    1000 | lm loss: 2.5 | loss\n"
		 "scale: 4096.0 | grad norm: 1.5 |\n",
		 "megatron",
		 "1 r 100 loss=2.5 grad_norm=1.5 loss_scale=4096 | max_steps=1000\n"},
	};
	forms(c, sizeof(c) / sizeof(c[0]));
}
END_TEST

/* CSV tables with text columns (a date, a phase, a run's name: every row
 * was rejected before) and several loss columns; the same in text. */
START_TEST(tables_and_several_losses)
{
	static const struct form c[] = {
		{"text columns: a date is the ts, an evaluation phase skips its row",
		 "time,step,phase,loss,lr,run\n"
		 "2024-05-01 10:00:00,100,train,2.31,0.0003,gpt-small\n"
		 "2024-05-01 10:05:00,100,val,2.45,,gpt-small\n"
		 "2024-05-01 10:10:00,200,train,2.25,0.0003,gpt-small\n",
		 "csv",
		 "2 r 100 ts=1714557600 loss=2.31 lr=0.0003\n"
		 "4 r 200 ts=1714558200 loss=2.25 lr=0.0003\n"},
		{"several loss columns: the total's is the loss, all kept",
		 "step,loss_pr,loss_ce,total_loss,lr\n10,0.52,1.21,1.73,1e-4\n20,0.5,1.2,1.7,1e-4\n",
		 "lightning_csv",
		 "2 r 10 loss=1.73 lr=0.0001 | loss_pr=0.52 loss_ce=1.21 total_loss=1.73\n"
		 "3 r 20 loss=1.7 lr=0.0001 | loss_pr=0.5 loss_ce=1.2 total_loss=1.7\n"},
		{"several loss columns, no total: the first",
		 "iteration,loss_pr,loss_ce,val_loss_pr\n1,0.52,1.21,\n2,0.51,1.19,0.6\n",
		 "csv",
		 "2 r 1 loss=0.52 | loss_pr=0.52 loss_ce=1.21\n"
		 "3 r 2 loss=0.51 | loss_pr=0.51 loss_ce=1.19 val_loss_pr=0.6\n"},
		{"several losses in text",
		 "step 10 | loss_pr: 0.52 | loss_ce: 1.21 | lr: 1e-4\n"
		 "step 20 | loss_pr: 0.50 | loss_ce: 1.20 | lr: 1e-4\n",
		 "text",
		 "1 r 10 loss=0.52 lr=0.0001 | loss_pr=0.52 loss_ce=1.21\n"
		 "2 r 20 loss=0.5 lr=0.0001 | loss_pr=0.5 loss_ce=1.2\n"},
		/* sa3cpp.cpp PR 28: a Mac and a CUDA run side by side */
		{"two runs side by side, cells 'loss / gnorm', the step a block index",
		 "| block | M4 loss / gnorm | PC loss / gnorm |\n"
		 "|---|---|---|\n"
		 "| 0 | 1.9516 / 3.8455 | 0.6734 / 0.0481 |\n"
		 "| 2 | 0.7420 / 0.6488 | 0.6629 / 0.0637 |\n",
		 "text",
		 "3 M4 0 loss=1.9516 grad_norm=3.8455\n"
		 "3 PC 0 loss=0.6734 grad_norm=0.0481\n"
		 "4 M4 2 loss=0.742 grad_norm=0.6488\n"
		 "4 PC 2 loss=0.6629 grad_norm=0.0637\n"},
		/* an excerpt of a long run resumed at its first step: a resume
		 * (one run, the engine opens a segment), not a new run; a log
		 * that starts from scratch again is a new run (readers' tests) */
		{"an excerpt resumed at its own first step stays one run",
		 "step 94768 | loss 1.9439\nstep 94769 | loss 1.9344\nstep 94768 | loss 2.0429\n",
		 "text",
		 "1 r 94768 loss=1.9439\n2 r 94769 loss=1.9344\n3 r 94768 loss=2.0429\n"},
		/* dbolya/yolact issue 382, the first line pasted without "[1" */
		{"YOLACT: one-letter losses, T their total",
		 "1073]    3220 || B: 0.117 | C: 0.043 | M: 0.244 | S: 0.060 | I: 0.014 | T: 0.478 || ETA: 1:42:02 || timer: 0.826\n"
		 "[1076]    3230 || B: 0.116 | C: 0.042 | M: 0.244 | S: 0.060 | I: 0.014 | T: 0.477 || ETA: 1:41:48 || timer: 0.851\n",
		 "text",
		 "1 r 3220 loss=0.478 | b=0.117 c=0.043 m=0.244 s=0.06 i=0.014 t=0.478 timer=0.826\n"
		 "2 r 3230 loss=0.477 | b=0.116 c=0.042 m=0.244 s=0.06 i=0.014 t=0.477 timer=0.851\n"},
	};
	forms(c, sizeof(c) / sizeof(c[0]));
	/* text in a role's column is reported; the row's other numbers count */
	struct res r;
	read_str("step,loss,grad_norm\n1,oops,0.5\n", NULL, &r);
	ck_assert_str_eq(r.g.text, "2 r 1 grad_norm=0.5\n");
	ck_assert_int_eq(r.g.errors, 1);
	ck_assert_str_eq(r.g.errmsg[0], "bad_value: column \"loss\": \"oops\" is not a number; skipped");
	free(r.g.text);
}
END_TEST

/* A Megatron field name longer than the snake_case buffer, with
 * separators at its end (found by fuzz_paste: the '_' and the next letter
 * were written past the buffer under ASan); the name is cut. */
START_TEST(megatron_long_field_name)
{
	char name[97], line[512];
	memset(name, 'x', 94);
	memcpy(name + 94, " y", 3);   /* the '_' lands on the buffer's last two bytes */
	snprintf(line, sizeof(line), " iteration 1/ 2 | lm loss: 2.5 | %s: 1 |\n", name);
	struct res r;
	read_str(line, "megatron", &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_int_eq(r.g.points, 1);
	ck_assert(strstr(r.g.text, "loss=2.5"));
	free(r.g.text);
}
END_TEST

/* More forms people print and paste, each from a public issue thread (the
 * repository and issue named; the lines as posted): tables, a counter
 * that moves while another stands, bare leading counters, bracketed
 * names, a masked NaN, a sentence's "Loss is", a progress bar with its
 * percent, a wrapped torchtitan line, DeepSpeed's older overflow lines. */
START_TEST(more_forms)
{
	static const struct form c[] = {
		{"a Markdown table (NVIDIA-NeMo/Automodel)",
		 "| step | loss | grad_norm |\n|---:|---:|---:|\n| 0 | 13.6376 | 22.2936 |\n"
		 "| 100 | 11.9176 | 2.9912 |\n| 199 | 11.9158 | 2.8966 |\n",
		 "text",
		 "3 r 0 loss=13.6376 grad_norm=22.2936\n4 r 100 loss=11.9176 grad_norm=2.9912\n"
		 "5 r 199 loss=11.9158 grad_norm=2.8966\n"},
		{"Chainer's PrintReport columns (chainer/chainer#1733): the first loss column",
		 "epoch       main/loss   validation/main/loss  main/accuracy  validation/main/accuracy\n"
		 "5           0.0269791   0.0744294             0.991117       0.978                     \n"
		 "6           0.0727784   0.0743591             0.978667       0.9781                    "
		 "# unexpected accuracy\n",
		 "text",
		 "2 r 5 loss=0.0269791 | epoch=5 main/loss=0.0269791 validation/main/loss=0.0744294 "
		 "main/accuracy=0.991117 validation/main/accuracy=0.978\n"
		 "3 r 6 loss=0.0727784 | epoch=6 main/loss=0.0727784 validation/main/loss=0.0743591 "
		 "main/accuracy=0.978667 validation/main/accuracy=0.9781\n"},
		{"lit-gpt: iter moves, step stands (Lightning-AI/litgpt#628)",
		 "iter 1151 step 144: loss 1.7019, iter time: 1106.53ms (optimizer.step)\n"
		 "iter 1152 step 144: loss 11.4630, iter time: 1260.82ms\n",
		 "text",
		 "1 r 1151 loss=1.7019 | iter_time_ms=1106.53\n"
		 "2 r 1152 loss=11.463 | iter_time_ms=1260.82\n"},
		{"loguru, bracketed names, the step after the loss (nv-tlabs/LION#9)",
		 "2023-01-25 00:21:09.074 | INFO     | trainers.base_trainer:train_epochs:256 - [R0] | E5 "
		 "iter[ 14/ 15] | [Loss] 51566519.44 | [exp] ./exp/0125/car/3dbf3ah_hvae_lion_B40 | [step]"
		 "    89 | [url] none | [time] 0.4m (~5h) |[best] 0 -100.000x1e-2 \n"
		 "2023-01-25 00:21:34.569 | INFO     | trainers.base_trainer:train_epochs:256 - [R0] | E6 "
		 "iter[ 14/ 15] | [Loss] nan | [exp] ./exp/0125/car/3dbf3ah_hvae_lion_B40 | [step]   104 "
		 "| [url] none | [time] 0.4m (~5h) |[best] 0 -100.000x1e-2 \n",
		 "text",
		 "1 r 89 ts=1674606069.074 loss=51566519.44 | e5_iter=14 time_m=0.4 best=0\n"
		 "2 r 104 ts=1674606094.569 loss=NaN | e6_iter=14 time_m=0.4 best=0\n"},
		{"bare epoch and step before the fields (cchen156/Learning-to-See-in-the-Dark#117)",
		 "333 160 Loss=nan Time=0.036\n333 161 Loss=nan Time=0.042\n334 1 Loss=nan Time=0.044\n",
		 "text",
		 "1 r 160 loss=NaN | time_elapsed=0.036\n2 r 161 loss=NaN | time_elapsed=0.042\n"
		 "3 r 53614 loss=NaN | time_elapsed=0.044\n"},
		{"a NaN masked as nanxxx (PaddlePaddle/PaddleOCR#11031)",
		 "[2023/10/09 10:49:12] ppocr INFO: epoch: [986/2000], global_step: 737800, lr: 0.000516, "
		 "acc: 0.000000, norm_edit_dis: 0.000000, CTCLoss: nanxxx, SARLoss: nanxxx, loss: nanxxx, "
		 "avg_reader_cost: 0.00013 s, avg_batch_cost: 0.30189 s, avg_samples: 128.0, ips: 423.98978 "
		 "samples/s, eta: 2 days, 17:48:30\n",
		 "text",
		 "1 r 737800 ts=1696848552 loss=NaN lr=0.000516 | epoch=986 acc=0 norm_edit_dis=0 "
		 "ctcloss=NaN sarloss=NaN avg_reader_cost=0.00013 avg_batch_cost=0.30189 avg_samples=128 "
		 "ips=423.98978 eta=2\n"},
		{"sentences: \"Loss is Infinity.\" (intel/ipex-llm#1486)",
		 "2017-08-20 16:11:46 INFO  DistriOptimizer$:295 - [Epoch 64 740096/1281167][Iteration "
		 "45459][Wall Clock 197340.717246379s] Train 1792 in 4.006890034seconds. Throughput is "
		 "447.22968 records/second. Loss is Infinity. Current learning rate is 0.046281366472703075. "
		 "Current weight decay is 1.0E-4. Current momentum is 0.9.\n",
		 "text",
		 "1 r 45459 ts=1503245506 loss=Infinity lr=0.046281366472703075 throughput=447.22968 | "
		 "epoch=64 wall_clock_s=197340.717246379 train=1792 current_weight_decay=0.0001 "
		 "current_momentum=0.9\n"},
		{"Lightning's bar with its percent first (Lightning-AI/pytorch-lightning#3866)",
		 "Epoch 0:  93% 1586/1702 [12:50<00:56,  2.06it/s, loss=0.158, v_num=0, train_loss=0.149]\n"
		 "Epoch 0:  93% 1587/1702 [12:50<00:55,  2.06it/s, loss=0.158, v_num=0, train_loss=0.149]\n",
		 "text",
		 "1 r 1586 loss=0.158 | epoch=0 v_num=0 train_loss=0.149\n"
		 "2 r 1587 loss=0.158 | epoch=0 v_num=0 train_loss=0.149\n"},
		{"a torchtitan line hard-wrapped by an issue box (pytorch/torchtitan)",
		 "[rank0]:[titan] 2026-07-16 11:20:41,921 - root - INFO - step:  1  loss:\n"
		 "7.98820  grad_norm:  3.7762  memory:  3.87GiB(2.17%)  tps: 1,578\n"
		 "tflops: 0.86  mfu: N/A\n"
		 "[rank0]:[titan] 2026-07-16 11:20:41,921 - root - INFO - Synchronizing\n"
		 "and adjusting timeout for all ProcessGroups to 0:01:40\n"
		 "[rank0]:[titan] 2026-07-16 11:20:42,091 - root - INFO - step:  2  loss:\n"
		 "6.08364  grad_norm:  4.2124  memory:  4.24GiB(2.38%)  tps: 96,705\n"
		 "tflops: 52.50  mfu: N/A\n",
		 "torchtitan",
		 "1 r 1 [rank0] ts=1784200841.921 loss=7.9882 grad_norm=3.7762 throughput=1578 | "
		 "memory_gib=3.87 memory_pct=2.17 tflops=0.86\n"
		 "6 r 2 [rank0] ts=1784200842.091 loss=6.08364 grad_norm=4.2124 throughput=96705 | "
		 "memory_gib=4.24 memory_pct=2.38 tflops=52.5\n"},
		{"DeepSpeed's older fp16 optimizer, every rank (deepspeedai/DeepSpeed#697)",
		 "[2021-01-26 22:05:35,108] [INFO] [fused_optimizer.py:314:_update_scale] \n"
		 "Grad overflow on iteration 8\n"
		 "[2021-01-26 22:05:35,108] [INFO] [fused_optimizer.py:314:_update_scale] \n"
		 "Grad overflow on iteration 8\n"
		 "[2021-01-26 22:05:35,108] [INFO] [fused_optimizer.py:316:_update_scale] Reducing dynamic "
		 "loss scale from 1 to 1\n"
		 "[2021-01-26 22:05:35,108] [INFO] [fused_optimizer.py:316:_update_scale] Reducing dynamic "
		 "loss scale from 1 to 1\n"
		 "[2021-01-26 22:05:35,108] [INFO] [logging.py:60:log_dist] [Rank 0] Overflow detected. "
		 "Skipping step. Attempted loss scale: 1, reducing to 1\n",
		 "text",
		 "2 r 8 event=overflow attempted_loss_scale=1 loss_scale=1 ts=1611698735.108\n"},
	};
	forms(c, sizeof(c) / sizeof(c[0]));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rd_paste");
	TCase *t = tcase_create("forms");
	tcase_add_test(t, quoted_and_fenced);
	tcase_add_test(t, prefixed_lines);
	tcase_add_test(t, text_forms);
	tcase_add_test(t, framework_forms);
	tcase_add_test(t, tables_and_several_losses);
	tcase_add_test(t, megatron_long_field_name);
	tcase_add_test(t, more_forms);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return rd_main(suite());
}
