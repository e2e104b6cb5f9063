/*
 * Unit tests of the lines every framework prints alike, read as wire
 * events in every stdout format (readers/rd_events.c): fp16 overflow lines
 * (DeepSpeed, fairseq, apex, the scaler's floor) and checkpoint saves and
 * loads (Megatron, fairseq, the HF Trainer, DeepSpeed, OLMo, torchtitan,
 * nanoGPT, Lightning), and a loop's statement that its loss was not finite,
 * with the steps they get.  Each case holds the exact
 * lines of its source where one is named.  Every input is read in one
 * piece and byte by byte (rdtest.h).
 */
#include "gwcheck.h"

#include <stdlib.h>
#include <string.h>

#include "rdtest.h"

/* ---- overflow lines ---------------------------------------------------- */

/* bigscience-workshop/bigscience train/tr8b-104B/chronicles.md (commit
 * 9e64edec), lines 445-451, as committed: a fenced Megatron-DeepSpeed log
 * with DeepSpeed's OVERFLOW lines between the iterations.  Each overflow
 * is the next iteration's (the line comes before that iteration's record),
 * at the time its prefix names, with the scale before and after. */
START_TEST(deepspeed_overflow_in_megatron)
{
	struct res r;
	read_str("```\n"
	         " iteration    17061/  159576 | consumed samples:      8128736 | consumed tokens:  "
	         "16647651328 | elapsed time per iteration (ms): 423042.3 | learning rate: 5.948E-05 | "
	         "global batch size:  2048 | lm loss: 2.667121E+00 | loss scale: 1048576.0 | grad norm: "
	         "464441.887 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan "
	         "iterations:   0 | samples per second: 0.005 | TFLOPs: 32.03 |\n"
	         "[2022-01-19 13:09:13,305] [INFO] [stage_1_and_2.py:1644:step] [deepscale] OVERFLOW! "
	         "Rank 0 Skipping step. Attempted loss scale: 1048576.0, reducing to 1048576.0\n"
	         " iteration    17062/  159576 | consumed samples:      8130784 | consumed tokens:  "
	         "16651845632 | elapsed time per iteration (ms): 422832.0 | learning rate: 5.948E-05 | "
	         "global batch size:  2048 | lm loss: 4.374269E+00 | loss scale: 1048576.0 | grad norm: "
	         "464441.887 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan "
	         "iterations:   0 | samples per second: 0.005 | TFLOPs: 32.04 |\n"
	         "[2022-01-19 13:16:17,683] [INFO] [stage_1_and_2.py:1644:step] [deepscale] OVERFLOW! "
	         "Rank 0 Skipping step. Attempted loss scale: 1048576.0, reducing to 524288.0\n"
	         "```\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "megatron");
	ck_assert_str_eq(r.g.text,
	                 "2 r 17061 loss=2.667121 grad_norm=464441.887 lr=5.948e-05 throughput=0.005 "
	                 "loss_scale=1048576 skipped=0 nan_iterations=0 | consumed_samples=8128736 "
	                 "consumed_tokens=16647651328 elapsed_time_per_iteration_ms=423042.3 "
	                 "global_batch_size=2048 num_zeros=0 tflops=32.03 max_steps=159576\n"
	                 "3 r 17062 event=overflow attempted_loss_scale=1048576 loss_scale=1048576 "
	                 "ts=1642597753.305\n"
	                 "4 r 17062 loss=4.374269 grad_norm=464441.887 lr=5.948e-05 throughput=0.005 "
	                 "loss_scale=1048576 skipped=0 nan_iterations=0 | consumed_samples=8130784 "
	                 "consumed_tokens=16651845632 elapsed_time_per_iteration_ms=422832 "
	                 "global_batch_size=2048 num_zeros=0 tflops=32.04 max_steps=159576\n"
	                 "5 r 17063 event=overflow attempted_loss_scale=1048576 loss_scale=524288 "
	                 "ts=1642598177.683\n");
	ck_assert_int_eq(r.g.errors, 0);
	free(r.g.text);
}
END_TEST

/* fairseq >= 0.10 (fairseq/trainer.py: "NOTE: gradient overflow detected,
 * ignoring gradient, setting loss scale to: X"; lines as in a public AML
 * example's expected output) and fairseq <= 0.9 ("| WARNING: overflow
 * detected, setting loss scale to: X"); apex amp ("Gradient overflow.
 * Skipping step, loss scaler 0 reducing loss scale to X"), and the floor:
 * DeepSpeed's "Current loss scale already at minimum" (once, though every
 * rank and the traceback print it). */
START_TEST(overflow_wordings)
{
	struct res r;
	read_str("2021-03-08 12:32:10 | INFO | train_inner | epoch 001:      2 / 1563 loss=16.446, "
	         "num_updates=2, lr=4e-05, gnorm=19.777, loss_scale=4\n"
	         "2021-03-08 12:33:12 | INFO | fairseq.trainer | NOTE: gradient overflow detected, "
	         "ignoring gradient, setting loss scale to: 2.0\n"
	         "2021-03-08 12:33:51 | INFO | fairseq.trainer | NOTE: gradient overflow detected, "
	         "ignoring gradient, setting loss scale to: 1.0\n"
	         "| WARNING: overflow detected, setting loss scale to: 0.5\n"
	         "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 0.25\n"
	         "Exception: Current loss scale already at minimum - cannot decrease scale anymore. "
	         "Exiting run.\n"
	         "[rank1]: Exception: Current loss scale already at minimum - cannot decrease scale "
	         "anymore. Exiting run.\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "fairseq");
	ck_assert_str_eq(r.g.text,
	                 "1 r 2 ts=1615206730 loss=16.446 grad_norm=19.777 lr=4e-05 loss_scale=4 | "
	                 "epoch=1\n"
	                 "2 r 3 event=overflow loss_scale=2 ts=1615206792\n"
	                 "3 r 4 event=overflow loss_scale=1 ts=1615206831\n"
	                 "4 r 5 event=overflow loss_scale=0.5\n"
	                 "5 r 6 event=overflow loss_scale=0.25\n"
	                 "6 r 7 event=overflow min_scale=true\n");
	free(r.g.text);
}
END_TEST

/* A paste of nothing but DeepSpeed's overflow lines (the HF Trainer's
 * progress bar around them) is read: the lines before any point wait for
 * it and end at its step; without a point, they count from 1.  Lines as
 * in a public issue about DeepSpeed stage 3 (HF transformers run). */
START_TEST(overflow_before_points)
{
	struct res r;
	read_str("  0%|          | 0/500 [00:00<?, ?it/s][2022-07-26 19:15:51,159] [INFO] "
	         "[stage3.py:1834:_overflow_clean_up] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
	         "Attempted loss scale: 65536, reducing to 65536\n"
	         "  0%|          | 1/500 [00:00<03:47,  2.19it/s][2022-07-26 19:15:52,710] [INFO] "
	         "[stage3.py:1834:_overflow_clean_up] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
	         "Attempted loss scale: 65536, reducing to 32768\n"
	         "{'loss': 11.2, 'learning_rate': 5e-05, 'epoch': 0.01}\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "swift");
	/* the HF Trainer prints no step: its first dict is point 1 */
	ck_assert_str_eq(r.g.text,
	                 "1 r 0 event=overflow attempted_loss_scale=65536 loss_scale=65536 "
	                 "ts=1658862951.159\n"
	                 "2 r 1 event=overflow attempted_loss_scale=65536 loss_scale=32768 "
	                 "ts=1658862952.71\n"
	                 "3 r 1 loss=11.2 lr=5e-05 | epoch=0.01\n");
	free(r.g.text);

	read_str("> [2023-08-02 00:41:17,526] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] "
	         "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 4294967296, reducing to "
	         "2147483648\n"
	         "> [2023-08-02 00:41:17,578] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] "
	         "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 2147483648, reducing to "
	         "1073741824\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.g.text,
	                 "1 r 1 event=overflow attempted_loss_scale=4294967296 loss_scale=2147483648 "
	                 "ts=1690936877.526\n"
	                 "2 r 2 event=overflow attempted_loss_scale=2147483648 loss_scale=1073741824 "
	                 "ts=1690936877.578\n");
	free(r.g.text);
}
END_TEST

/* ---- checkpoint lines ------------------------------------------------- */

/* Each framework's own words for a checkpoint saved and one loaded to
 * resume (wordings from their source: rd_events.c).  A resume waits for
 * the next point; its step is the line's, or the one before that point. */
START_TEST(checkpoint_wordings)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		/* Megatron: saved at N; loaded at N then iteration N+1 (several
		 * ranks print it: once); a load at iteration 0 is a fine-tune start */
		{" iteration      100/    1000 | lm loss: 2.5 |\n"
		 "saving checkpoint at iteration     100 to /ckpt\n"
		 "  successfully saved checkpoint at iteration     100 to /ckpt\n"
		 " loading checkpoint from /ckpt at iteration 100\n"
		 "  successfully loaded checkpoint from /ckpt at iteration 100\n"
		 " iteration      101/    1000 | lm loss: 2.4 |\n",
		 "1 r 100 loss=2.5 | max_steps=1000\n2 r 100 event=checkpoint_saved\n"
		 "5 r 100 event=resumed checkpoint_step=100\n6 r 101 loss=2.4 | max_steps=1000\n"},
		{"  successfully loaded checkpoint from /pretrained at iteration 0\n"
		 " iteration        1/    1000 | lm loss: 9.5 |\n",
		 "2 r 1 loss=9.5 | max_steps=1000\n"},
		/* fairseq (checkpoint_utils.py), <= 0.9 and >= 0.10 */
		{"| loaded checkpoint checkpoints/checkpoint_last.pt (epoch 143 @ 40015 updates)\n"
		 "| epoch 144:    10 / 280 loss=3.1, num_updates=40025, gnorm=0.4\n"
		 "2023-06-13 17:37:40 | INFO | fairseq.checkpoint_utils | Saved checkpoint "
		 "checkpoints/checkpoint_144_40100.pt (epoch 144 @ 40100 updates, score 4.2) (writing "
		 "took 3.2 seconds)\n",
		 "1 r 40015 event=resumed checkpoint_step=40015\n"
		 "2 r 40025 loss=3.1 grad_norm=0.4 | epoch=144\n"
		 "3 r 40100 event=checkpoint_saved ts=1686677860\n"},
		/* HF Trainer stdout (trainer.py) */
		{"{'loss': 1.2, 'learning_rate': 5e-05, 'epoch': 0.5, 'step': 500}\n"
		 "[INFO|trainer.py:2985] 2024-02-29 07:58:54,120 >> Saving model checkpoint to "
		 "out/checkpoint-500\n"
		 "[INFO|trainer.py:2050] 2024-02-29 08:10:00,000 >>   Continuing training from global "
		 "step 500\n"
		 "{'loss': 1.19, 'learning_rate': 4.9e-05, 'epoch': 0.51, 'step': 510}\n",
		 "1 r 500 loss=1.2 lr=5e-05 | epoch=0.5\n"
		 "2 r 500 event=checkpoint_saved ts=1709193534.12\n"
		 "3 r 500 event=resumed checkpoint_step=500 ts=1709194200\n"
		 "4 r 510 loss=1.19 lr=4.9e-05 | epoch=0.51\n"},
		/* DeepSpeed engine.py: every file of the checkpoint names its step */
		{"{'loss': 2.0, 'learning_rate': 1e-05, 'epoch': 1.0, 'step': 1000}\n"
		 "[2023-08-02 00:41:17,458] [INFO] [engine.py:3427:_save_checkpoint] Saving model "
		 "checkpoint: out/global_step1000/mp_rank_00_model_states.pt\n"
		 "[2023-08-02 00:41:18,000] [INFO] [torch_checkpoint_engine.py:21:save] [Torch] Saving "
		 "out/global_step1000/zero_pp_rank_0_mp_rank_00_optim_states.pt...\n"
		 "[2023-08-02 00:41:19,000] [INFO] [engine.py:3427:_save_checkpoint] Saving model "
		 "checkpoint: out/global_step1000/zero_pp_rank_1_mp_rank_00_model_states.pt\n",
		 "1 r 1000 loss=2 lr=1e-05 | epoch=1\n"
		 "2 r 1000 event=checkpoint_saved ts=1690936877.458\n"},
		/* OLMo train.py: the load names the step in its path; a load for
		 * evaluation, with no training after it, is no resume */
		{"2024-02-01 00:00:00.000\tnode:0\tolmo.train:1000\tINFO\tCheckpoint saved to "
		 "/ckpt/step500-unsharded\n"
		 "2024-02-01 01:00:00.000\tnode:0\tolmo.train:200\tINFO\tLoading checkpoint from "
		 "/ckpt/step500-unsharded...\n"
		 "2024-02-01 01:00:05.000\tnode:0\tolmo.train:210\tINFO\tCheckpoint successfully loaded\n"
		 "2024-02-01 01:01:00.000\tnode:0\tolmo.train:1000\tINFO\t[step=501/739328]\n"
		 "    train/CrossEntropyLoss=2.21\n    optim/total_grad_norm=0.5\n"
		 "2024-02-01 02:00:00.000\tnode:0\tolmo.eval:10\tINFO\tLoading checkpoint from "
		 "/ckpt/step1000...\n",
		 "1 r 500 event=checkpoint_saved ts=1706745600\n"
		 "2 r 500 event=resumed checkpoint_step=500 ts=1706749200\n"
		 "4 r 501 ts=1706749260 loss=2.21 grad_norm=0.5 | max_steps=739328\n"},
		/* torchtitan checkpoint.py (step 0: a seed checkpoint) */
		{"[rank0]:2025-04-01 00:25:47,084 - root - INFO - step: 640  loss:  6.2116  memory: 87.04GiB(93.48%)\n"
		 "[rank0]:2025-04-01 00:25:54,090 - root - INFO - Saving a full checkpoint at last step, step 644.\n"
		 "[rank0]:2025-04-01 00:26:54,090 - root - INFO - Loading the checkpoint at step 640.\n"
		 "[rank0]:2025-04-01 00:27:00,000 - root - INFO - step: 641  loss:  6.2  memory: 87.04GiB(93.48%)\n"
		 "[rank0]:2025-04-01 00:27:05,000 - root - INFO - Saving the checkpoint (or staging if async is enabled).\n",
		 "1 r 640 [rank0] ts=1743467147.084 loss=6.2116 | memory_gib=87.04 memory_pct=93.48\n"
		 "2 r 644 [rank0] event=checkpoint_saved ts=1743467154.09\n"
		 "3 r 640 [rank0] event=resumed checkpoint_step=640 ts=1743467214.09\n"
		 "4 r 641 [rank0] ts=1743467220 loss=6.2 | memory_gib=87.04 memory_pct=93.48\n"
		 "5 r 641 [rank0] event=checkpoint_saved ts=1743467225\n"},
		/* nanoGPT train.py: "Resuming training from out", then the
		 * checkpoint's own step */
		{"iter 0: loss 4.0000, time 100.00ms, mfu 10.00%\n"
		 "iter 1999: loss 1.0000, time 100.00ms, mfu 10.00%\n"
		 "Resuming training from out\n"
		 "iter 1500: loss 1.1000, time 100.00ms, mfu 10.00%\n",
		 "1 r 0 loss=4 | time_ms=100 mfu_pct=10\n"
		 "2 r 1999 loss=1 | time_ms=100 mfu_pct=10\n"
		 "3 r 1500 event=resumed checkpoint_step=1500\n"
		 "4 r 1500 loss=1.1 | time_ms=100 mfu_pct=10\n"},
		/* Lightning: a restore before training resumes it (the path names
		 * the step); one before testing, with no training after it, does not */
		{"Restoring states from the checkpoint path at /ckpt/epoch=3-step=1000.ckpt\n"
		 "step 1001, loss: 0.5\n"
		 "Restoring states from the checkpoint path at /ckpt/epoch=9-step=2000.ckpt\n",
		 "1 r 1000 event=resumed checkpoint_step=1000\n2 r 1001 loss=0.5\n"},
		/* PyTorch's imagenet example and timm: the epoch, not the step: a
		 * resume at the next point's step - 1 */
		{"=> loading checkpoint 'ckpt.pth.tar'\n"
		 "=> loaded checkpoint 'ckpt.pth.tar' (epoch 3)\nstep 31, loss: 1.0\n",
		 "2 r 30 event=resumed checkpoint_step=30\n3 r 31 loss=1\n"},
		{"Loaded checkpoint 'output/train/last.pth.tar' (epoch 12)\nstep 5, loss: 1.0\n",
		 "1 r 4 event=resumed checkpoint_step=4\n2 r 5 loss=1\n"},
		/* svoice (facebookresearch/svoice#22, as pasted) */
		{"[2021-11-11 08:29:13,317][svoice.solver][INFO] - Loading checkpoint model: "
		 "checkpoint.th\nstep 81, loss: -5.5\n",
		 "1 r 80 event=resumed checkpoint_step=80 ts=1636619353.317\n2 r 81 loss=-5.5\n"},
		/* mmcv, mmengine */
		{"2020-06-01 10:00:00,000 - mmdet - INFO - resumed epoch 5, iter 2500\n"
		 "step 2501, loss: 0.4\n",
		 "1 r 2500 event=resumed checkpoint_step=2500 ts=1591005600\n2 r 2501 loss=0.4\n"},
		{"resumed epoch: 5, iter: 2500\nstep 2501, loss: 0.4\n",
		 "1 r 2500 event=resumed checkpoint_step=2500\n2 r 2501 loss=0.4\n"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct res r;
		read_str(cases[i].in, NULL, &r);
		ck_assert_msg(!strcmp(r.g.text, cases[i].want), "case %zu (%s, rc %d %s):\n%s", i,
		              r.format, r.rc, r.err, r.g.text);
		free(r.g.text);
	}
}
END_TEST

/* A loop's statement that its loss was not finite, without the loss's own
 * line: a point of that loss at the step the line names, else the last
 * point's + 1.  torchvision references/detection/engine.py (the lines of
 * pytorch/vision#1631 as pasted), detectron2 engine/train_loop.py, Keras'
 * TerminateOnNaN, Megatron's NaN checks, autograd's anomaly mode; a finite
 * loss named, or no point before, is nothing; the same statement again
 * right after adds nothing. */
START_TEST(stopped_wordings)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{"Epoch: [0]  [20/60]  eta: 0:00:43  lr: 0.007132  loss: 2.6232 (2.4223)  "
		 "loss_classifier: 0.5024 (0.4540)  time: 1.0178  data: 0.0479  max mem: 3014\n"
		 "Loss is inf, stopping training\n",
		 "1 r 20 loss=2.6232 lr=0.007132 | epoch=0 loss_classifier=0.5024 time_elapsed=1.0178 "
		 "data=0.0479 max_mem=3014\n2 r 21 loss=Infinity\n"},
		{"step 7, loss: 2.5\nLoss is nan, stopping training\n{'loss_ce': tensor(nan)}\n",
		 "1 r 7 loss=2.5\n2 r 8 loss=NaN\n"},
		{"[03/09 10:01:02 d2.utils.events]:  iter: 19  total_loss: 1.2  lr: 0.0004\n"
		 "FloatingPointError: Loss became infinite or NaN at iteration=23!\n",
		 "1 r 19 loss=1.2 lr=0.0004 | total_loss=1.2\n2 r 23 loss=NaN\n"},
		{"step 3, loss: 0.7\nBatch 63: Invalid loss, terminating training\n",
		 "1 r 3 loss=0.7\n2 r 4 loss=NaN\n"},
		{"step 3, loss: 0.7\nLoss is 0.7, stopping training\n", "1 r 3 loss=0.7\n"},
		{"step 3, loss: 0.7\nLoss is tensor(nan, device='cuda:0', grad_fn=<AddBackward0>), "
		 "stopping training\n", "1 r 3 loss=0.7\n2 r 4 loss=NaN\n"},
		{"step 3, loss: 0.7\nLoss is not decreasing, stopping training early\n",
		 "1 r 3 loss=0.7\n"},
		{"Loss is nan, stopping training\n", ""},
		/* Megatron's checks (megatron/core/distributed/param_and_grad_buffer.py,
		 * pretrain_gpt.py loss_func; the rerun state machine's wording), every
		 * rank saying it: one point */
		{"step 3, loss: 0.7\nAssertionError: Rank 13: found NaN in local grad norm in backward "
		 "pass before data-parallel communication collective. Device: 5, node: node-15-11\n"
		 "AssertionError: Rank 14: found NaN in local grad norm in backward pass before "
		 "data-parallel communication collective. Device: 6, node: node-15-11\n",
		 "1 r 3 loss=0.7\n2 r 4 grad_norm=NaN\n"},
		{"step 3, loss: 0.7\nRuntimeError: Rank 255, node=n1, device=0, iteration 4: Unexpected "
		 "result nan (message='found NaN in local forward loss calculation')\n",
		 "1 r 3 loss=0.7\n2 r 4 loss=NaN\n"},
		{"step 3, loss: 0.7\nfound Inf in local forward loss calculation\n",
		 "1 r 3 loss=0.7\n2 r 4 loss=Infinity\n"},
		{"step 3, loss: 0.7\nfound NaN in local cache, rebuilding\n", "1 r 3 loss=0.7\n"},
		/* autograd's anomaly mode (torch/csrc/autograd/engine.cpp) */
		{"step 3, loss: 0.7\nRuntimeError: Function 'LogSoftmaxBackward0' returned nan values "
		 "in its 0th output.\n", "1 r 3 loss=0.7\n2 r 4 grad_norm=NaN\n"},
		/* a point logged after a stop: the statement counts again */
		{"step 3, loss: 0.7\nLoss is nan, stopping training\nstep 9, loss: 0.6\n"
		 "Loss is nan, stopping training\n",
		 "1 r 3 loss=0.7\n2 r 4 loss=NaN\n3 r 9 loss=0.6\n4 r 10 loss=NaN\n"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct res r;
		read_str(cases[i].in, NULL, &r);
		ck_assert_msg(!strcmp(r.g.text ? r.g.text : "", cases[i].want),
		              "case %zu (%s, rc %d %s):\n%s", i, r.format, r.rc, r.err, r.g.text);
		free(r.g.text);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rd_events");
	TCase *t = tcase_create("events");
	tcase_add_test(t, deepspeed_overflow_in_megatron);
	tcase_add_test(t, overflow_wordings);
	tcase_add_test(t, overflow_before_points);
	tcase_add_test(t, checkpoint_wordings);
	tcase_add_test(t, stopped_wordings);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return rd_main(suite());
}
