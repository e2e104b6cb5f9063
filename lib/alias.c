/*
 * alias: the roles (loss, grad_norm, lr, throughput, the ts pseudo-role and
 * the fp16 fields loss_scale, skipped, nan_iterations) and the alias
 * table that maps field names to them (see alias.h and docs/wire-format.md).  The table holds the aliases in the order they
 * were added, which is their priority within a role (the built-in ones
 * first, then the configuration's), with a gw_strtab index by name over
 * them; the parser (wire.c) looks each field up with the hash it already
 * has.  Not thread-safe to extend; lookups may run concurrently.
 */
#include "alias.h"

#include "buf.h"
#include "hash.h"
#include "strtab.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const role_names[GW_NALIAS_ROLES] = {
	"loss", "grad_norm", "lr", "throughput", "ts", "loss_scale", "skipped", "nan_iterations",
};

const char *gw_role_name(enum gw_role r)
{
	return (unsigned)r < GW_NALIAS_ROLES ? role_names[r] : "?";
}

const char *gw_field_name(enum gw_field f)
{
	return (unsigned)f < GW_NFIELDS ? role_names[GW_FIELD_ROLE(f)] : "?";
}

int gw_role_parse(const char *name)
{
	for (int i = 0; i < GW_NALIAS_ROLES; i++)
		if (strcmp(name, role_names[i]) == 0)
			return i;
	return -1;
}

/* Built-in aliases, best first per role.  The sources: PyTorch loops
 * (loss, grad_norm), Hugging Face Trainer (loss, grad_norm, learning_rate,
 * train_samples_per_second), Megatron-LM text logs ("lm loss",
 * "grad norm", "learning rate"), llm.c (norm, tok_per_s), composer/OLMo
 * ("train/loss", "optim/total grad norm"), Lightning/W&B ("train/loss",
 * "lr-AdamW"), ms-swift ("train_speed(iter/s)"), build-nanoGPT stdout
 * ("tok/sec"), Lightning's on_step/on_epoch split ("train_loss_step"; the
 * "_epoch" aggregate is deliberately not an alias: it repeats an epoch's
 * last step with a different value) and its grad_norm() utility
 * ("grad_2.0_norm_total"), Keras' TensorBoard callback ("epoch_loss"; Keras
 * logs only per epoch, and validation goes to another file under the same
 * tag), the TF2 Object Detection API ("Loss/total_loss"; its per-part losses
 * stay extras), fairseq ("gnorm", "wps": words per second), torchtitan
 * ("tps"), torchtune ("tokens_per_second_per_gpu"), Composer ("loss/train/
 * total", OptimizerMonitor's "l2_norm/grad/global", LRMonitor's
 * "lr-<optimizer class>/group0"), OLMo ("train/CrossEntropyLoss") and
 * OLMo-core ("train/CE loss", "optim/LR (group 0)"), Megatron's TensorBoard
 * tags ("grad-norm", "learning-rate", "loss-scale": megatron/training.py
 * training_log) and DeepSpeed's monitor ("Train/Samples/train_loss",
 * "Train/Samples/lr", "Train/Samples/loss_scale": DeepSpeed's
 * docs/code-docs/source/monitor.rst), OLMo's speed monitor
 * ("throughput/device/tokens_per_second", olmo/train.py) and OLMo-core's
 * ("throughput/device/TPS", its SpeedMonitorCallback), OpenNMT-py's stdout
 * ("xent": the cross-entropy it trains on; "ppl" is its exponential) and
 * MXNet's Speedometer ("cross-entropy", its CrossEntropy metric's name),
 * ESPnet2's trainer ("lr_0", newer "optim0_lr0": the first optimizer's
 * first parameter group).  Nothing named val_* / eval_* /
 * test_* is an alias: they are evaluations, not training points.
 *
 * The fp16 fields: Megatron's stdout prints "loss scale", "number of
 * skipped iterations" and "number of nan iterations" (older forks
 * "skipped iterations", "nan iterations"), which its reader snake-cases
 * (number_of_skipped_iterations); fairseq and DeepSpeed's monitor log
 * "loss_scale".  Only per-interval skip counts are aliases of "skipped":
 * DeepSpeed's engine line "skipped=N" and its "skipped_steps" count since
 * the start of the job, which is another quantity. */
static const struct {
	enum gw_role role;
	const char *name;
} default_aliases[] = {
	{GW_ROLE_LOSS, "loss"},
	{GW_ROLE_LOSS, "train_loss"},
	{GW_ROLE_LOSS, "train/loss"},
	{GW_ROLE_LOSS, "training_loss"},
	{GW_ROLE_LOSS, "lm loss"},
	{GW_ROLE_LOSS, "lm_loss"},
	{GW_ROLE_LOSS, "train/lm_loss"},
	{GW_ROLE_LOSS, "loss/train"},
	{GW_ROLE_LOSS, "train/ce_loss"},
	{GW_ROLE_LOSS, "trl"},
	{GW_ROLE_LOSS, "train_loss_step"},
	{GW_ROLE_LOSS, "train/loss_step"},
	{GW_ROLE_LOSS, "epoch_loss"},
	{GW_ROLE_LOSS, "Loss/total_loss"},
	{GW_ROLE_LOSS, "loss/train/total"},
	{GW_ROLE_LOSS, "train/CrossEntropyLoss"},
	{GW_ROLE_LOSS, "train/CE loss"},
	{GW_ROLE_LOSS, "Train/Samples/train_loss"},
	{GW_ROLE_LOSS, "xent"},
	{GW_ROLE_LOSS, "cross-entropy"},
	{GW_ROLE_GRAD_NORM, "grad_norm"},
	{GW_ROLE_GRAD_NORM, "grad norm"},
	{GW_ROLE_GRAD_NORM, "gradient_norm"},
	{GW_ROLE_GRAD_NORM, "train/grad_norm"},
	{GW_ROLE_GRAD_NORM, "optim/total grad norm"},
	{GW_ROLE_GRAD_NORM, "optim/total_grad_norm"},
	{GW_ROLE_GRAD_NORM, "total_grad_norm"},
	{GW_ROLE_GRAD_NORM, "grad_norm/total"},
	{GW_ROLE_GRAD_NORM, "gnorm"},
	{GW_ROLE_GRAD_NORM, "norm"},
	{GW_ROLE_GRAD_NORM, "grad_2.0_norm_total"},
	{GW_ROLE_GRAD_NORM, "l2_norm/grad/global"},
	{GW_ROLE_GRAD_NORM, "grad-norm"},
	{GW_ROLE_LR, "lr"},
	{GW_ROLE_LR, "learning_rate"},
	{GW_ROLE_LR, "learning rate"},
	{GW_ROLE_LR, "train/learning_rate"},
	{GW_ROLE_LR, "train/lr"},
	{GW_ROLE_LR, "optim/lr"},
	{GW_ROLE_LR, "optim/learning_rate_group0"},
	{GW_ROLE_LR, "lr-AdamW"},
	{GW_ROLE_LR, "lr-Adam"},
	{GW_ROLE_LR, "lr-SGD"},
	{GW_ROLE_LR, "epoch_lr"},
	{GW_ROLE_LR, "epoch_learning_rate"},
	{GW_ROLE_LR, "lr-DecoupledAdamW/group0"},
	{GW_ROLE_LR, "lr-DecoupledLionW/group0"},
	{GW_ROLE_LR, "lr-DecoupledSGDW/group0"},
	{GW_ROLE_LR, "lr-AdamW/group0"},
	{GW_ROLE_LR, "lr-Adam/group0"},
	{GW_ROLE_LR, "lr-SGD/group0"},
	{GW_ROLE_LR, "optim/LR (group 0)"},
	{GW_ROLE_LR, "learning-rate"},
	{GW_ROLE_LR, "Train/Samples/lr"},
	{GW_ROLE_LR, "lr_0"},
	{GW_ROLE_LR, "optim0_lr0"},
	{GW_ROLE_THROUGHPUT, "throughput"},
	{GW_ROLE_THROUGHPUT, "samples_per_second"},
	{GW_ROLE_THROUGHPUT, "samples_per_sec"},
	{GW_ROLE_THROUGHPUT, "samples per second"},
	{GW_ROLE_THROUGHPUT, "tokens_per_s"},
	{GW_ROLE_THROUGHPUT, "tokens_per_sec"},
	{GW_ROLE_THROUGHPUT, "tokens_per_second"},
	{GW_ROLE_THROUGHPUT, "tok_per_s"},
	{GW_ROLE_THROUGHPUT, "tok/s"},
	{GW_ROLE_THROUGHPUT, "tok/sec"},
	{GW_ROLE_THROUGHPUT, "throughput/tokens_per_sec"},
	{GW_ROLE_THROUGHPUT, "train_speed(iter/s)"},
	{GW_ROLE_THROUGHPUT, "tps"},
	{GW_ROLE_THROUGHPUT, "wps"},
	{GW_ROLE_THROUGHPUT, "tokens_per_second_per_gpu"},
	{GW_ROLE_THROUGHPUT, "throughput/device/tokens_per_second"},
	{GW_ROLE_THROUGHPUT, "throughput/device/TPS"},
	{GW_ROLE_TS, "ts"},
	{GW_ROLE_TS, "timestamp"},
	{GW_ROLE_TS, "_timestamp"},
	{GW_ROLE_TS, "time"},
	{GW_ROLE_LOSS_SCALE, "loss_scale"},
	{GW_ROLE_LOSS_SCALE, "loss scale"},
	{GW_ROLE_LOSS_SCALE, "loss-scale"},
	{GW_ROLE_LOSS_SCALE, "Train/Samples/loss_scale"},
	{GW_ROLE_SKIPPED, "skipped"},
	{GW_ROLE_SKIPPED, "skipped_iterations"},
	{GW_ROLE_SKIPPED, "number of skipped iterations"},
	{GW_ROLE_SKIPPED, "number_of_skipped_iterations"},
	{GW_ROLE_SKIPPED, "skipped iterations"},
	{GW_ROLE_NAN_ITERATIONS, "nan_iterations"},
	{GW_ROLE_NAN_ITERATIONS, "number of nan iterations"},
	{GW_ROLE_NAN_ITERATIONS, "number_of_nan_iterations"},
	{GW_ROLE_NAN_ITERATIONS, "nan iterations"},
};

/* The table: the aliases in the order they were added (which is their
 * priority within a role) and an index by name over them. */
struct alias {
	char *name;
	int role;
	int prio;
};

struct gw_alias {
	struct alias *items;
	size_t n, cap;
	struct gw_strtab index;   /* name -> position in items */
	int next_prio[GW_NALIAS_ROLES];
};

int gw_alias_add(struct gw_alias *a, enum gw_role role, const char *name)
{
	if ((unsigned)role >= GW_NALIAS_ROLES || !*name)
		return -EINVAL;
	size_t n = strlen(name);
	uint32_t k;
	if (gw_strtab_find(&a->index, name, n, &k) == 0)
		return a->items[k].role == (int)role ? 0 : -EEXIST;
	if (a->n >= UINT32_MAX || gw_grow((void **)&a->items, &a->cap, a->n + 1, sizeof(*a->items)) < 0)
		return -ENOMEM;
	struct alias *it = &a->items[a->n];
	if (!(it->name = strdup(name)))
		return -ENOMEM;
	int rc = gw_strtab_put(&a->index, it->name, n, (uint32_t)a->n);
	if (rc < 0) {
		free(it->name);
		return rc;
	}
	it->role = role;
	it->prio = a->next_prio[role]++;
	a->n++;
	return 0;
}

struct gw_alias *gw_alias_new(void)
{
	struct gw_alias *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	for (size_t i = 0; i < GW_ARRAY_SIZE(default_aliases); i++) {
		if (gw_alias_add(a, default_aliases[i].role, default_aliases[i].name) < 0) {
			gw_alias_free(a);
			return NULL;
		}
	}
	return a;
}

void gw_alias_free(struct gw_alias *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		free(a->items[i].name);
	free(a->items);
	gw_strtab_free(&a->index);
	free(a);
}

int gw__alias_lookup_hashed(const struct gw_alias *a, const char *name, size_t len,
                            uint32_t hash, int *prio)
{
	uint32_t k;
	if (gw_strtab_find_hashed(&a->index, name, len, hash, &k) < 0)
		return -1;
	if (prio)
		*prio = a->items[k].prio;
	return a->items[k].role;
}

size_t gw_alias_count(const struct gw_alias *a)
{
	return a->n;
}

int gw_alias_lookup(const struct gw_alias *a, const char *name, size_t len,
                    int *prio)
{
	return gw__alias_lookup_hashed(a, name, len, gw_fnv1a32(name, len), prio);
}
