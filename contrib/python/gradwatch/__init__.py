"""gradwatch: the Python side of the gradwatch training-telemetry daemon.

    import gradwatch
    gw = gradwatch.Client(run="my-run")
    gw.log(step, loss=..., grad_norm=..., lr=...)      # never blocks, never raises
    gw.checkpoint_saved(step, model, optimizer)          # after saving a checkpoint
    gw.resumed(step, model, optimizer, optimizer_state_loaded=True, check=True)

Where the daemon is: the arguments, else $GRADWATCH_SOCKET (Unix socket),
$GRADWATCH_URL (HTTP API; the only address given: ingest over HTTP),
$GRADWATCH_UDP, $GRADWATCH_TOKEN.  gw.stats() says what became of every
line (sent, sent_unconfirmed over UDP, dropped, lost, ...).  In a
distributed job only global rank 0 sends (gradwatch.global_rank();
Client(all_ranks=True) sends from every rank with its "rank").

Standard library only; torch is never imported (the manifests read the live
objects' attributes).  Framework callbacks: gradwatch.hf.GradwatchCallback
(Hugging Face transformers), gradwatch.lightning.GradwatchCallback (PyTorch
Lightning); both import their framework only when imported themselves.
"""
from .client import Client, GateUnavailable, ResumeError, default_address, default_url, global_rank
from .manifest import manifest as resume_manifest

__all__ = ['Client', 'ResumeError', 'GateUnavailable', 'default_address', 'default_url',
           'global_rank', 'resume_manifest']
__version__ = '0.1.0'


def __getattr__(name):
    """gradwatch.hf and gradwatch.lightning without importing them first
    (`callbacks=[gradwatch.hf.GradwatchCallback()]` after `import gradwatch`);
    each imports its framework, so only when it is asked for (PEP 562)."""
    if name in ('hf', 'lightning'):
        import importlib
        return importlib.import_module('.' + name, __name__)
    raise AttributeError('module %r has no attribute %r' % (__name__, name))
