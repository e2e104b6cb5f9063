"""Hugging Face transformers integration: a TrainerCallback over the client.

    from gradwatch.hf import GradwatchCallback
    trainer = Trainer(..., callbacks=[GradwatchCallback(run="my-run")])

on_log         the Trainer's logs (set logging_steps=1 to see every step):
               loss, grad_norm, learning_rate (sent as lr), and the other
               numbers, at state.global_step; evaluation logs are skipped
on_save        checkpoint_saved with the manifest of the live model/optimizer
on_train_begin when state.global_step > 0 the Trainer resumed from a
               checkpoint: sends `resumed` and, with check_resume=True (the
               default), asks the resume gate, which raises
               gradwatch.ResumeError before the first step if the optimizer
               state, parameter order or hyperparameters do not match
on_train_end   run_finished (reason "train_end") at state.global_step, and
               flush: the daemon knows the silence after training is no stall

The Trainer calls callbacks on every process of a distributed job: only the
world process zero (state.is_world_process_zero) sends, as W&B's and
TensorBoard's callbacks log; all_ranks=True sends from every process, each
line with its rank (args.process_index).  The resume gate asks on every
process (see gradwatch.client).

The Trainer passes model, optimizer and lr_scheduler to every callback
event as keyword arguments; those are what the manifests are computed from.
"""
import os

from transformers import TrainerCallback

from .client import Client

_SKIP = {'epoch', 'total_flos', 'step'}


class GradwatchCallback(TrainerCallback):
    def __init__(self, run=None, client=None, check_resume=True, **client_kwargs):
        self.run = run
        self.client = client
        self.check_resume = check_resume
        self._client_kwargs = client_kwargs

    def _get_client(self, args, state=None):
        if self.client is None:
            run = self.run or getattr(args, 'run_name', None) or \
                os.path.basename(os.path.normpath(getattr(args, 'output_dir', None) or 'run'))
            kw = dict(self._client_kwargs)
            zero = getattr(state, 'is_world_process_zero', None)
            if 'rank' not in kw and zero is not None:
                # the Trainer knows: its global process index
                kw['rank'] = 0 if zero else max(1, int(getattr(args, 'process_index', 1) or 1))
            self.client = Client(run=run, **kw)
        return self.client

    @staticmethod
    def _state_file_exists(args, state):
        """Did the Trainer have an optimizer state to load?  (None if unknown)"""
        ckpt = getattr(args, 'resume_from_checkpoint', None)
        if not isinstance(ckpt, str):
            out = getattr(args, 'output_dir', None)
            if not out:
                return None
            ckpt = os.path.join(out, 'checkpoint-%d' % state.global_step)
        if not os.path.isdir(ckpt):
            return None
        return any(os.path.exists(os.path.join(ckpt, f))
                   for f in ('optimizer.pt', 'optimizer.bin', 'optimizer.safetensors'))

    def on_train_begin(self, args, state, control, model=None, optimizer=None, lr_scheduler=None,
                       **kwargs):
        client = self._get_client(args, state)
        if state.global_step > 0 and optimizer is not None:
            client.resumed(state.global_step, model, optimizer, lr_scheduler,
                           optimizer_state_loaded=self._state_file_exists(args, state),
                           check=self.check_resume)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or 'loss' not in logs:
            return      # evaluation and end-of-training summaries
        metrics = {}
        for k, v in logs.items():
            if k in _SKIP or k.startswith('eval_') or k.startswith('train_'):
                continue
            metrics['lr' if k == 'learning_rate' else k] = v
        self._get_client(args, state).log(state.global_step, **metrics)

    def on_save(self, args, state, control, model=None, optimizer=None, lr_scheduler=None, **kwargs):
        if optimizer is not None:
            self._get_client(args, state).checkpoint_saved(state.global_step, model, optimizer, lr_scheduler)

    def on_train_end(self, args, state, control, **kwargs):
        if self.client is not None:
            self.client.run_finished(state.global_step, reason='train_end')
            self.client.flush()
