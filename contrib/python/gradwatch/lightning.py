"""PyTorch Lightning integration: a Callback over the client.

    from gradwatch.lightning import GradwatchCallback
    trainer = L.Trainer(callbacks=[GradwatchCallback(run="my-run")])

on_before_optimizer_step  total L2 norm of the gradients (before Lightning
                          clips them)
on_train_batch_end        loss (from the step's output), grad norm and the
                          first optimizer's lr at trainer.global_step
on_save_checkpoint        checkpoint_saved with the live manifest
on_load_checkpoint        notes whether the checkpoint held optimizer state
on_train_start            trainer.global_step > 0 means a resume: `resumed`,
                          and with check_resume=True the resume gate, which
                          raises gradwatch.ResumeError before the first step
on_train_end              run_finished (reason "train_end") and flush: the
                          silence after training is no stall

Lightning calls callbacks on every process of a distributed job: only the
global zero (trainer.is_global_zero) sends, as its own loggers do;
all_ranks=True sends from every process, each line with its rank
(trainer.global_rank).  The resume gate asks on every process (see
gradwatch.client).

Works with `lightning.pytorch` (Lightning 2.x) and `pytorch_lightning`.
Steps are optimizer steps (trainer.global_step), so with gradient
accumulation a step is logged once per optimizer step.
"""
try:
    from lightning.pytorch.callbacks import Callback
except ImportError:   # the older package name
    from pytorch_lightning.callbacks import Callback

from .client import Client


def _first_scheduler(trainer):
    cfgs = getattr(trainer, 'lr_scheduler_configs', None) or []
    return cfgs[0].scheduler if cfgs else None


class GradwatchCallback(Callback):
    def __init__(self, run=None, client=None, check_resume=True, **client_kwargs):
        super().__init__()
        self.run = run
        self.client = client
        self.check_resume = check_resume
        self._client_kwargs = client_kwargs
        self._grad_norm = None
        self._state_loaded = None

    def _get_client(self, trainer):
        if self.client is None:
            logger = getattr(trainer, 'logger', None)
            run = self.run or (getattr(logger, 'name', None) if logger else None) or 'lightning'
            kw = dict(self._client_kwargs)
            zero = getattr(trainer, 'is_global_zero', None)
            if 'rank' not in kw and zero is not None:
                kw['rank'] = 0 if zero else max(1, int(getattr(trainer, 'global_rank', 1) or 1))
            self.client = Client(run=run, **kw)
        return self.client

    def on_load_checkpoint(self, trainer, pl_module, checkpoint):
        self._state_loaded = bool(checkpoint.get('optimizer_states'))

    def on_train_start(self, trainer, pl_module):
        client = self._get_client(trainer)
        if trainer.global_step > 0 and trainer.optimizers:
            client.resumed(trainer.global_step, pl_module, trainer.optimizers[0],
                           _first_scheduler(trainer), optimizer_state_loaded=self._state_loaded,
                           check=self.check_resume)

    def on_before_optimizer_step(self, trainer, pl_module, optimizer, *args):
        total = None
        for g in optimizer.param_groups:
            for p in g['params']:
                if p.grad is not None:
                    sq = p.grad.detach().float().pow(2).sum()
                    total = sq if total is None else total + sq
        self._grad_norm = total.sqrt() if total is not None else None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *args):
        loss = outputs.get('loss') if isinstance(outputs, dict) else outputs
        metrics = {}
        if loss is not None:
            metrics['loss'] = loss.detach() if hasattr(loss, 'detach') else loss
        if self._grad_norm is not None:
            metrics['grad_norm'] = self._grad_norm
            self._grad_norm = None
        if trainer.optimizers:
            metrics['lr'] = trainer.optimizers[0].param_groups[0]['lr']
        self._get_client(trainer).log(trainer.global_step, **metrics)

    def on_save_checkpoint(self, trainer, pl_module, checkpoint):
        if trainer.optimizers:
            self._get_client(trainer).checkpoint_saved(trainer.global_step, pl_module,
                                                       trainer.optimizers[0],
                                                       _first_scheduler(trainer))

    def on_train_end(self, trainer, pl_module):
        if self.client is not None:
            self.client.run_finished(trainer.global_step, reason='train_end')
            self.client.flush()
