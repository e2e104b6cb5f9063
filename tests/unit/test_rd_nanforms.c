/*
 * Unit tests of four forms people paste when a run goes NaN, read as
 * nothing before: Darknet's iteration lines (readers/rd_darknet.c),
 * OpenNMT-py's Step lines (xent), MXNet's Speedometer lines and epoch
 * summaries (cross-entropy) and ESPnet2's trainer lines (readers/
 * rd_plain.c).  A case from a public thread holds its exact lines and names
 * the thread; a case labelled synthetic is built in the form's shape for
 * what no paste showed.  Every input is read in one piece and byte by byte
 * (rdtest.h).
 */
#include "gwcheck.h"

#include <stdlib.h>
#include <string.h>

#include "rdtest.h"

/* ---- Darknet --------------------------------------------------------------- */

START_TEST(darknet)
{
	static const struct form c[] = {
		/* AlexeyAB/darknet#597: pjreddie's "avg" form among the Region
		 * lines (every loss 0 while IoU is -nan: no objects seen) */
		{"pjreddie form",
		 "Region 94 Avg IOU: -nan, Class: -nan, Obj: -nan, No Obj: 0.000001, .5R: -nan, .75R: "
		 "-nan,  count: 0\n"
		 "Region 106 Avg IOU: -nan, Class: -nan, Obj: -nan, No Obj: 0.000000, .5R: -nan, .75R: "
		 "-nan,  count: 0\n"
		 "999: 0.000000, 0.000000 avg, 0.009960 rate, 4.797707 seconds, 63936 images\n"
		 "Loaded: 0.000041 seconds\n",
		 "darknet", "3 r 999 loss=0 lr=0.00996 | avg_loss=0 seconds=4.797707 images=63936\n"},
		/* miyakz1192/game_ad_automation, dev_memo (a YOLOv3-tiny
		 * diary, `grep avg nohup.out`): AlexeyAB's form, NaN at
		 * iteration 8 */
		{"AlexeyAB form, NaN",
		 "  avg_outputs = 324846 \n"
		 "   6: 556.002319, 555.994751 avg loss, 0.000000 rate, 40.055308 seconds, 384 images, "
		 "5600.956159 hours left\n"
		 "   7: 555.905579, 555.985840 avg loss, 0.000000 rate, 40.106618 seconds, 448 images, "
		 "5600.600656 hours left\n"
		 "   8: -nan, -nan avg loss, 0.000000 rate, 40.373377 seconds, 512 images, 5600.319865 "
		 "hours left\n",
		 "darknet",
		 "2 r 6 loss=556.002319 lr=0 | avg_loss=555.994751 seconds=40.055308 images=384 "
		 "hours_left=5600.956159\n"
		 "3 r 7 loss=555.905579 lr=0 | avg_loss=555.98584 seconds=40.106618 images=448 "
		 "hours_left=5600.600656\n"
		 "4 r 8 loss=NaN lr=0 | avg_loss=NaN seconds=40.373377 images=512 "
		 "hours_left=5600.319865\n"},
		/* the same diary: the terminal title's line is no point */
		{"title line",
		 " (next mAP calculation at 1000 iterations) \x1b]2;30/6000: loss=-nan hours "
		 "left=939.4\x07\n"
		 "  30: -nan, -nan avg loss, 0.000000 rate, 328.933514 seconds, 1920 images, 939.408316 "
		 "hours left\n"
		 "  realloc(): invalid old size\n",
		 "darknet",
		 "2 r 30 loss=NaN lr=0 | avg_loss=NaN seconds=328.933514 images=1920 "
		 "hours_left=939.408316\n"},
		/* synthetic: quoted in an issue, fenced, with CRLF line ends */
		{"quoted CRLF paste, synthetic",
		 "> ```\r\n"
		 ">  100: 5.123456, 6.234567 avg loss, 0.001000 rate, 3.200000 seconds, 6400 images\r\n"
		 ">  102: -nan, -nan avg loss, 0.001000 rate, 3.100000 seconds, 6528 images  \r\n"
		 "> ```\r\n",
		 "darknet",
		 "2 r 100 loss=5.123456 lr=0.001 | avg_loss=6.234567 seconds=3.2 images=6400\n"
		 "3 r 102 loss=NaN lr=0.001 | avg_loss=NaN seconds=3.1 images=6528\n"},
	};
	forms(c, sizeof(c) / sizeof(c[0]));
}
END_TEST

/* ---- OpenNMT-py ------------------------------------------------------------ */

START_TEST(opennmt)
{
	static const struct form c[] = {
		/* OpenNMT/OpenNMT-py#1072: "ppl:nan after step5000" */
		{"Step lines, NaN",
		 "[2018-11-26 15:02:57,162 INFO] Step 5600/50000; acc:  47.14; ppl:  9.83; xent: 2.29; "
		 "lr: 0.00069; 1065/1591 tok/s;  20926 sec\n"
		 "[2018-11-26 15:06:01,481 INFO] Step 5650/50000; acc:   0.19; ppl:   nan; xent:  nan; "
		 "lr: 0.00070; 1928/2310 tok/s;  21110 sec\n"
		 "[2018-11-26 15:09:03,577 INFO] Loading train dataset from ./disc_data/data.train.1.pt, "
		 "number of examples: 221287\n",
		 "text",
		 "1 r 5600 ts=1543244577.162 loss=2.29 lr=0.00069 | acc=47.14 ppl=9.83\n"
		 "2 r 5650 ts=1543244761.481 loss=NaN lr=0.0007 | acc=0.19 ppl=NaN\n"},
		/* OpenNMT/OpenNMT-py#709: the 2018 form, epoch and batch */
		{"Epoch lines",
		 "Epoch  1, 12850/37527; acc:   3.99; ppl: 12792.57; xent:   9.46; 3438 src tok/s; 3517 "
		 "tgt tok/s;   9823 s elapsed\n"
		 "Epoch  1, 12900/37527; acc:   4.48; ppl: 35173.75; xent:  10.47; 3599 src tok/s; 3678 "
		 "tgt tok/s;   9861 s elapsed\n",
		 "text",
		 "1 r 12850 loss=9.46 | epoch=1 acc=3.99 ppl=12792.57\n"
		 "2 r 12900 loss=10.47 | epoch=1 acc=4.48 ppl=35173.75\n"},
	};
	forms(c, sizeof(c) / sizeof(c[0]));
}
END_TEST

/* ---- MXNet ----------------------------------------------------------------- */

START_TEST(mxnet)
{
	static const struct form c[] = {
		/* apache/mxnet#5422: Module.fit's Speedometer, then the epoch's
		 * summary, its time and a synthetic second epoch (epochs count
		 * from 0: its batch 100 is step 900 + 100) */
		{"Speedometer and summary",
		 "INFO:root:Epoch[0] Batch [800]\tSpeed: 39988.00 samples/sec\tTrain-cross-entropy=0.360503\n"
		 "INFO:root:Epoch[0] Batch [900]\tSpeed: 40203.55 samples/sec\tTrain-cross-entropy=0.358936\n"
		 "INFO:root:Epoch[0] Train-cross-entropy=0.350466\n"
		 "INFO:root:Epoch[0] Time cost=1.476\n"
		 "INFO:root:Epoch[0] Validation-cross-entropy=0.3\n"
		 "INFO:root:Epoch[1] Batch [100]\tSpeed: 40726.16 samples/sec\tTrain-cross-entropy=0.3\n",
		 "text",
		 "1 r 800 loss=0.360503 | epoch=0 speed=39988\n"
		 "2 r 900 loss=0.358936 | epoch=0 speed=40203.55\n"
		 "3 r 901 loss=0.350466 | epoch=0\n"
		 "6 r 1000 loss=0.3 | epoch=1 speed=40726.16\n"},
		/* synthetic: the newer Speedometer (metrics without "Train-"),
		 * the loss NaN, then the summary of that epoch NaN */
		{"cross-entropy NaN, synthetic",
		 "INFO:root:Epoch[0] Batch [100]\tSpeed: 500.00 samples/sec\taccuracy=0.500000\t"
		 "cross-entropy=1.200000\n"
		 "INFO:root:Epoch[0] Batch [200]\tSpeed: 500.00 samples/sec\taccuracy=0.000000\t"
		 "cross-entropy=nan\n"
		 "INFO:root:Epoch[0] Train-cross-entropy=nan\n",
		 "text",
		 "1 r 100 loss=1.2 | epoch=0 speed=500 accuracy=0.5\n"
		 "2 r 200 loss=NaN | epoch=0 speed=500 accuracy=0\n"
		 "3 r 201 loss=NaN | epoch=0\n"},
	};
	forms(c, sizeof(c) / sizeof(c[0]));
}
END_TEST

/* ---- ESPnet2 --------------------------------------------------------------- */

START_TEST(espnet)
{
	static const struct form c[] = {
		/* espnet/espnet#2674: an LM's epoch 1 ending, its results line
		 * (train and valid loss: no point) and epoch 2's first range,
		 * whose step counts on from epoch 1's last batch */
		{"epochs and results",
		 "[PC] 2020-11-11 16:30:14,840 (trainer:486) INFO: 1epoch:train:7126-7500batch: "
		 "iter_time=0.001, forward_time=0.005, loss=2.339, backward_time=0.005, "
		 "optim_step_time=1.963e-04, lr_0=0.100, train_time=0.014\n"
		 "[PC] 2020-11-11 16:30:18,406 (trainer:243) INFO: 1epoch results: [train] "
		 "iter_time=0.001, forward_time=0.005, loss=2.853, backward_time=0.005, "
		 "optim_step_time=1.974e-04, lr_0=0.100, train_time=0.013, time=1 minute and 42.6 "
		 "seconds, total_count=7507, [valid] loss=2.387, time=3 seconds, total_count=240, "
		 "[att_plot] time=0.28 seconds, total_count=0\n"
		 "[PC] 2020-11-11 16:30:18,969 (trainer:286) INFO: The best model has been updated: "
		 "valid.loss\n"
		 "[PC] 2020-11-11 16:30:18,969 (trainer:184) INFO: 2/20epoch started. Estimated time "
		 "to finish: 33 minutes and 42.59 seconds\n"
		 "[PC] 2020-11-11 16:30:24,312 (trainer:486) INFO: 2epoch:train:1-375batch: "
		 "iter_time=0.001, forward_time=0.005, loss=2.313, backward_time=0.005, "
		 "optim_step_time=2.000e-04, lr_0=0.100, train_time=0.014\n",
		 "text",
		 "1 r 7500 ts=1605112214.84 loss=2.339 lr=0.1 | epoch=1 iter_time=0.001 "
		 "forward_time=0.005 backward_time=0.005 optim_step_time=0.0001963 train_time=0.014\n"
		 "5 r 7875 ts=1605112224.312 loss=2.313 lr=0.1 | epoch=2 iter_time=0.001 "
		 "forward_time=0.005 backward_time=0.005 optim_step_time=0.0002 train_time=0.014\n"},
		/* espnet/espnet#5633: a newer trainer (grad_norm, loss_scale,
		 * optim0_lr0), pasted without the host and the time */
		{"newer fields",
		 "(trainer:737) INFO: 1epoch:train:1001-2000batch: iter_time=1.512e-04, "
		 "forward_time=0.142, loss_ctc=124.483, loss_att=162.661, acc=0.314, loss=151.208, "
		 "backward_time=0.254, grad_norm=43.966, clip=100.000, loss_scale=6.554e+04, "
		 "optim_step_time=0.046, optim0_lr0=4.004e-04, train_time=0.503\n",
		 "text",
		 "1 r 2000 loss=151.208 grad_norm=43.966 lr=0.0004004 loss_scale=65540 | epoch=1 "
		 "iter_time=0.0001512 forward_time=0.142 loss_ctc=124.483 loss_att=162.661 acc=0.314 "
		 "backward_time=0.254 clip=100 optim_step_time=0.046 train_time=0.503\n"},
		/* synthetic: the loss NaN in a range */
		{"NaN, synthetic",
		 "[host] 2021-01-01 10:00:00,000 (trainer:600) INFO: 1epoch:train:1-100batch: "
		 "loss_ctc=120.5, loss_att=80.2, acc=0.1, loss=92.3, lr_0=1.0e-05\n"
		 "[host] 2021-01-01 10:01:00,000 (trainer:600) INFO: 1epoch:train:101-200batch: "
		 "loss_ctc=nan, loss_att=nan, acc=0.0, loss=nan, lr_0=2.0e-05\n",
		 "text",
		 "1 r 100 ts=1609495200 loss=92.3 lr=1e-05 | epoch=1 loss_ctc=120.5 loss_att=80.2 "
		 "acc=0.1\n"
		 "2 r 200 ts=1609495260 loss=NaN lr=2e-05 | epoch=1 loss_ctc=NaN loss_att=NaN acc=0\n"},
	};
	forms(c, sizeof(c) / sizeof(c[0]));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rd_nanforms");
	TCase *t = tcase_create("forms");
	tcase_add_test(t, darknet);
	tcase_add_test(t, opennmt);
	tcase_add_test(t, mxnet);
	tcase_add_test(t, espnet);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return rd_main(suite());
}
