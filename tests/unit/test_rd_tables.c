/*
 * Unit tests of three forms people paste when a vision or RL run goes
 * NaN (readers/rd_yolo.c, rd_tfod.c, rd_sb3.c): the Ultralytics YOLOv5 /
 * YOLOv8 epoch table, the TF Object Detection API's Step lines and loss
 * dicts, Stable-Baselines3's logger tables.  A case from a public issue
 * thread holds its exact lines and names the thread; a case labelled
 * synthetic is built in the form's shape for what no paste showed.  Every
 * input is read in one piece and byte by byte (rdtest.h).
 */
#include "gwcheck.h"

#include <stdlib.h>
#include <string.h>

#include "rdtest.h"

/* ---- Ultralytics -------------------------------------------------------- */

START_TEST(yolo_tables)
{
	static const struct form c[] = {
		/* ultralytics/ultralytics#1149: every loss NaN from epoch 1
		 * (YOLOv8 segmentation, AMP on a GTX 1660 Ti) */
		{"YOLOv8-seg, NaN",
		 "      Epoch    GPU_mem   box_loss   seg_loss   cls_loss   dfl_loss  Instances    "
		 "   Size\n"
		 "      1/100      2.37G        nan        nan        nan        nan         16    "
		 "    640: "
		 "100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 1/1 "
		 "[00:02<00:00,  2.42s/it]\n",
		 "ultralytics",
		 "2 r 1 loss=NaN | gpu_mem_gb=2.37 box_loss=NaN seg_loss=NaN cls_loss=NaN "
		 "dfl_loss=NaN instances=16 size=640 max_epochs=100\n"},
		/* ultralytics/ultralytics#21765: YOLOv8 epochs 9 and 10 of 55,
		 * each with its validation lines (no training point) */
		{"YOLOv8 with validation rows",
		 "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
		 "       9/55      9.02G     0.1295      7.585      3.256         16        640: "
		 "100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| "
		 "954/954 [11:32<00:00,  1.38it/s]\n"
		 "                 Class     Images  Instances      Box(P          R      mAP50  "
		 "mAP50-95): "
		 "100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 66/66 "
		 "[00:37<00:00,  1.74it/s]\n"
		 "                   all       1049       1164      0.764      0.776      0.739    "
		 "  0.526\n"
		 "\n"
		 "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
		 "      10/55      9.02G     0.1271      7.321      3.224         12        640: "
		 "100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| "
		 "954/954 [11:25<00:00,  1.39it/s]\n"
		 "                 Class     Images  Instances      Box(P          R      mAP50  "
		 "mAP50-95): "
		 "100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 66/66 "
		 "[00:37<00:00,  1.74it/s]\n"
		 "                   all       1049       1164      0.622       0.83      0.624    "
		 "  0.448\n",
		 "ultralytics",
		 "2 r 9 loss=10.9705 | gpu_mem_gb=9.02 box_loss=0.1295 cls_loss=7.585 "
		 "dfl_loss=3.256 instances=16 size=640 max_epochs=55\n"
		 "7 r 10 loss=10.6721 | gpu_mem_gb=9.02 box_loss=0.1271 cls_loss=7.321 "
		 "dfl_loss=3.224 instances=12 size=640 max_epochs=55\n"},
		/* ultralytics/yolov5#4963: YOLOv5 box, obj and cls NaN on the GPU
		 * (fine on the CPU) */
		{"YOLOv5, NaN",
		 " Epoch   gpu_mem       box       obj       cls    labels  img_size\n"
		 "      1/99     2.64G         nan       nan       nan         4       416: "
		 "100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 7/7 "
		 "[00:15<00:00,  2.27s/it]\n"
		 "               Class     Images     Labels          P          R     mAP@.5 "
		 "mAP@.5:.95: "
		 "100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 1/1 "
		 "[00:01<00:00,  1.30s/it]\n"
		 "                 all               14          0             0          0        "
		 "    0  "
		 "            0\n",
		 "ultralytics",
		 "2 r 1 loss=NaN | gpu_mem_gb=2.64 box=NaN obj=NaN cls=NaN labels=4 img_size=416 "
		 "max_epochs=99\n"},
		/* ultralytics/yolov5#2965: an older YOLOv5 with a total column
		 * (the loss), first redraw of epoch 0 */
		{"YOLOv5 with total",
		 " Epoch   gpu_mem       box       obj       cls     total    labels  img_size\n"
		 "     0/299      5.2G      0.11    0.1612   0.03867    0.3099        28      "
		 "1280:   "
		 "1%|\u258c                                           | 1/78 [00:04<05:27,  "
		 "4.26s/it]\n",
		 "ultralytics",
		 "2 r 0 loss=0.3099 | gpu_mem_gb=5.2 box=0.11 obj=0.1612 cls=0.03867 total=0.3099 "
		 "labels=28 img_size=1280 max_epochs=299\n"},
		/* ultralytics/yolov5#10314 (a pull request's log): YOLOv5 7.0's
		 * names, a bar without brackets */
		{"YOLOv5 7.0",
		 "      Epoch    GPU_mem   box_loss   obj_loss   cls_loss  Instances       Size\n"
		 "        0/1      22.4G    0.07281    0.08384    0.06359        199        640: "
		 "100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| "
		 "1849/1849 13:15\n",
		 "ultralytics",
		 "2 r 0 loss=0.22024 | gpu_mem_gb=22.4 box_loss=0.07281 obj_loss=0.08384 "
		 "cls_loss=0.06359 instances=199 size=640 max_epochs=1\n"},
		/* a YOLOv8 classifier: the header as ultralytics/ultralytics#5920
		 * quotes it, the rows synthetic; its one loss column is the loss */
		{"YOLOv8-cls header, synthetic rows",
		 "      Epoch    GPU_mem       loss  Instances       Size\n"
		 "       1/10     0.648G      2.297         16        224: 100%|##########| 63/63\n"
		 "       2/10     0.648G        nan         16        224: 100%|##########| 63/63\n",
		 "ultralytics",
		 "2 r 1 loss=2.297 | gpu_mem_gb=0.648 instances=16 size=224 max_epochs=10\n"
		 "3 r 2 loss=NaN | gpu_mem_gb=0.648 instances=16 size=224 max_epochs=10\n"},
		/* synthetic: a job that died inside epoch 10 and ran it again
		 * after a resume: both are points, the engine sees the step
		 * go back */
		{"synthetic: an epoch run again",
		 "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
		 "      10/55      9.02G     0.1271      7.321      3.224         12        640:  40%|####  | "
		 "380/954\n"
		 "RuntimeError: CUDA error: an illegal memory access was encountered\n"
		 "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
		 "      10/55      9.02G     0.1280      7.300      3.200         12        640: 100%|######| "
		 "954/954\n",
		 "ultralytics",
		 "2 r 10 loss=10.6721 | gpu_mem_gb=9.02 box_loss=0.1271 cls_loss=7.321 dfl_loss=3.224 "
		 "instances=12 size=640 max_epochs=55\n"
		 "5 r 10 loss=10.628 | gpu_mem_gb=9.02 box_loss=0.128 cls_loss=7.3 dfl_loss=3.2 "
		 "instances=12 size=640 max_epochs=55\n"},
		/* synthetic: a terminal's log, the row redrawn with '\r' as the
		 * epoch runs; the last redraw of each epoch is its point */
		{"synthetic: redraws",
		 "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
		 "\r      1/100      2.61G      1.300      2.500      1.500         30        640: "
		 " 50%|#  | 59/118"
		 "\r      1/100      2.61G      1.234      2.345      1.456         32        640: "
		 "100%|## | 118/118\n"
		 "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
		 "\r      2/100      2.61G      1.100      2.100      1.400         31        640: "
		 " 50%|#  | 59/118"
		 "\r      2/100      2.61G        nan        nan        nan         31        640: "
		 "100%|## | 118/118\n",
		 "ultralytics",
		 "2 r 1 loss=5.035 | gpu_mem_gb=2.61 box_loss=1.234 cls_loss=2.345 dfl_loss=1.456 "
		 "instances=32 size=640 max_epochs=100\n"
		 "4 r 2 loss=NaN | gpu_mem_gb=2.61 box_loss=NaN cls_loss=NaN dfl_loss=NaN "
		 "instances=31 size=640 max_epochs=100\n"},
	};
	forms(c, sizeof(c) / sizeof(c[0]));
}
END_TEST

/* ---- TF Object Detection API --------------------------------------------- */

START_TEST(tf_objdet)
{
	static const struct form c[] = {
		/* armaanpriyadarshan/Training-a-Custom-TensorFlow-2.X-Object-Detector#6:
		 * the older Step line with its loss, TensorFlow's and absl's copy */
		{"Step lines with loss=",
		 "INFO:tensorflow:Step 3800 per-step time 0.766s loss=1.343\n"
		 "I0912 12:30:41.062087 139735407601536 model_lib_v2.py:652] Step 3800 per-step "
		 "time 0.766s loss=1.343\n"
		 "INFO:tensorflow:Step 3900 per-step time 0.764s loss=1.710\n"
		 "I0912 12:32:04.439736 139735407601536 model_lib_v2.py:652] Step 3900 per-step "
		 "time 0.764s loss=1.710\n",
		 "tf_objdet", "1 r 3800 loss=1.343 | per_step_time_s=0.766\n"
		 "3 r 3900 loss=1.71 | per_step_time_s=0.764\n"},
		/* EdjeElectronics/TensorFlow-Lite-Object-Detection-on-Android-and-Raspberry-Pi#183:
		 * efficientdet-d0's losses all NaN, the dict pasted alone (the
		 * paste's inline-code backticks around it left out) */
		{"a NaN dict alone",
		 "I0409 23:03:12.869635 140410452137792 model_lib_v2.py:708] "
		 "{'Loss/classification_loss': nan,\n"
		 " 'Loss/localization_loss': nan,\n"
		 " 'Loss/regularization_loss': nan,\n"
		 " 'Loss/total_loss': nan,\n"
		 " 'learning_rate': 0.07922263}\n",
		 "tf_objdet",
		 "1 r 1 loss=NaN lr=0.07922263 | Loss/classification_loss=NaN "
		 "Loss/localization_loss=NaN Loss/regularization_loss=NaN\n"},
		/* synthetic, in model_lib_v2.py's shape: the Step line, then the
		 * dict, each from both loggers; one point per step */
		{"synthetic: Step line and dict, both loggers",
		 "INFO:tensorflow:Step 100 per-step time 0.527s\n"
		 "I0526 10:00:00.123456 140000 model_lib_v2.py:705] Step 100 per-step time 0.527s\n"
		 "INFO:tensorflow:{'Loss/classification_loss': 0.52,\n"
		 " 'Loss/localization_loss': 0.31,\n"
		 " 'Loss/regularization_loss': 0.15,\n"
		 " 'Loss/total_loss': 0.98,\n"
		 " 'learning_rate': 0.0133}\n"
		 "I0526 10:00:00.124000 140000 model_lib_v2.py:708] {'Loss/classification_loss': "
		 "0.52,\n"
		 " 'Loss/localization_loss': 0.31,\n"
		 " 'Loss/regularization_loss': 0.15,\n"
		 " 'Loss/total_loss': 0.98,\n"
		 " 'learning_rate': 0.0133}\n"
		 "INFO:tensorflow:Step 200 per-step time 0.531s\n"
		 "INFO:tensorflow:{'Loss/classification_loss': nan,\n"
		 " 'Loss/localization_loss': nan,\n"
		 " 'Loss/regularization_loss': 0.15,\n"
		 " 'Loss/total_loss': nan,\n"
		 " 'learning_rate': 0.0133}\n",
		 "tf_objdet",
		 "3 r 100 loss=0.98 lr=0.0133 | per_step_time_s=0.527 "
		 "Loss/classification_loss=0.52 Loss/localization_loss=0.31 "
		 "Loss/regularization_loss=0.15\n"
		 "14 r 200 loss=NaN lr=0.0133 | per_step_time_s=0.531 Loss/classification_loss=NaN "
		 "Loss/localization_loss=NaN Loss/regularization_loss=0.15\n"},
	};
	forms(c, sizeof(c) / sizeof(c[0]));
}
END_TEST

/* ---- Stable-Baselines3 ---------------------------------------------------- */

START_TEST(sb3_tables)
{
	static const struct form c[] = {
		/* hill-a/stable-baselines#1204: an SB3 PPO table (time/ and
		 * train/ sections; no rollout/ for a custom model) */
		{"PPO table",
		 "-----------------------------------------\n"
		 "| time/                   |             |\n"
		 "|    fps                  | 26          |\n"
		 "|    iterations           | 7           |\n"
		 "|    time_elapsed         | 136         |\n"
		 "|    total_timesteps      | 3584        |\n"
		 "| train/                  |             |\n"
		 "|    approx_kl            | 0.010918302 |\n"
		 "|    clip_fraction        | 0.0658      |\n"
		 "|    clip_range           | 0.2         |\n"
		 "|    entropy_loss         | -14.2       |\n"
		 "|    explained_variance   | 0.00961     |\n"
		 "|    learning_rate        | 0.0002      |\n"
		 "|    loss                 | 20.1        |\n"
		 "|    n_updates            | 18          |\n"
		 "|    policy_gradient_loss | -0.00807    |\n"
		 "|    std                  | 1           |\n"
		 "|    value_loss           | 36.8        |\n"
		 "-----------------------------------------\n",
		 "sb3",
		 "14 r 3584 loss=20.1 lr=0.0002 | time/fps=26 time/iterations=7 "
		 "time/time_elapsed=136 train/approx_kl=0.010918302 train/clip_fraction=0.0658 "
		 "train/clip_range=0.2 train/entropy_loss=-14.2 train/explained_variance=0.00961 "
		 "train/n_updates=18 train/policy_gradient_loss=-0.00807 train/std=1 "
		 "train/value_loss=36.8\n"},
		/* synthetic, in SB3's shape: the first table (no train/ yet: no
		 * point), then a healthy one and one gone NaN */
		{"synthetic: NaN",
		 "---------------------------------\n"
		 "| rollout/           |          |\n"
		 "|    ep_len_mean     | 22.4     |\n"
		 "|    ep_rew_mean     | 22.4     |\n"
		 "| time/              |          |\n"
		 "|    fps             | 1041     |\n"
		 "|    iterations      | 1        |\n"
		 "|    time_elapsed    | 1        |\n"
		 "|    total_timesteps | 2048     |\n"
		 "---------------------------------\n"
		 "-----------------------------------------\n"
		 "| time/                   |             |\n"
		 "|    total_timesteps      | 4096        |\n"
		 "| train/                  |             |\n"
		 "|    loss                 | 5.23        |\n"
		 "|    n_updates            | 10          |\n"
		 "|    value_loss           | 14.1        |\n"
		 "-----------------------------------------\n"
		 "-----------------------------------------\n"
		 "| time/                   |             |\n"
		 "|    total_timesteps      | 6144        |\n"
		 "| train/                  |             |\n"
		 "|    loss                 | nan         |\n"
		 "|    n_updates            | 20          |\n"
		 "|    value_loss           | nan         |\n"
		 "-----------------------------------------\n",
		 "sb3", "15 r 4096 loss=5.23 | train/n_updates=10 train/value_loss=14.1\n"
		 "23 r 6144 loss=NaN | train/n_updates=20 train/value_loss=NaN\n"},
		{"synthetic: no time/ section, the step from train/n_updates",
		 "-----------------------------------------\n"
		 "| train/                  |             |\n"
		 "|    loss                 | nan         |\n"
		 "|    n_updates            | 30          |\n"
		 "-----------------------------------------\n",
		 "sb3", "3 r 30 loss=NaN | train/n_updates=30\n"},
	};
	forms(c, sizeof(c) / sizeof(c[0]));
}
END_TEST

/* Synthetic: a value that is no number where a loss is due is reported
 * with its line, field and column, and the redraw skipped; the others
 * are read (the epoch's last good redraw is its point).  A TF OD API dict cut by garbage is reported at its first
 * line. */
START_TEST(bad_values)
{
	struct res r;
	read_str("      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
	         "       1/10      2.61G      1.234       oops      1.456         32        640: 100%\n"
	         "       2/10      2.61G      1.200      2.300      1.400         32        640:  50%\r"
	         "       2/10      2.61G      1.200       oops      1.400         32        640: 100%\n",
	         NULL, &r);
	ck_assert_str_eq(r.format, "ultralytics");
	ck_assert_int_eq(r.g.errors, 2);
	ck_assert_int_eq((int)r.g.errline[0], 2);
	ck_assert_str_eq(r.g.errmsg[0], "bad_value: field \"cls_loss\" at column 41: expected a number");
	/* in a redraw, the column counts in the line */
	ck_assert_int_eq((int)r.g.errline[1], 3);
	ck_assert_str_eq(r.g.errmsg[1], "bad_value: field \"cls_loss\" at column 125: expected a number");
	ck_assert_str_eq(r.g.text, "3 r 2 loss=4.9 | gpu_mem_gb=2.61 box_loss=1.2 cls_loss=2.3 dfl_loss=1.4 "
	                           "instances=32 size=640 max_epochs=10\n");
	free(r.g.text);

	read_str("INFO:tensorflow:Step 100 per-step time 0.527s\n"
	         "INFO:tensorflow:{'Loss/total_loss': 0.98 ]] 'learning_rate': 0.0133}\n"
	         "INFO:tensorflow:Step 200 per-step time 0.531s\n"
	         "INFO:tensorflow:{'Loss/total_loss': 0.97,\n"
	         " 'learning_rate': 0.0133}\n",
	         NULL, &r);
	ck_assert_str_eq(r.format, "tf_objdet");
	ck_assert_int_eq(r.g.errors, 1);
	ck_assert_int_eq((int)r.g.errline[0], 2);
	ck_assert_str_eq(r.g.text, "4 r 200 loss=0.97 lr=0.0133 | per_step_time_s=0.531\n");
	free(r.g.text);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rd_tables");
	TCase *t = tcase_create("forms");
	tcase_add_test(t, yolo_tables);
	tcase_add_test(t, tf_objdet);
	tcase_add_test(t, sb3_tables);
	tcase_add_test(t, bad_values);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return rd_main(suite());
}
