"""Resume manifests: what a `checkpoint_saved` or `resumed` event carries,
computed from the live torch objects.

Nothing here imports torch: a model only needs `named_parameters()`, an
optimizer `param_groups` and `state`, a scheduler `state_dict()` or
`last_epoch`, so the module costs nothing to import and works with any
object shaped like torch's.

The fields (docs/wire-format.md, ../shared/eval/README.md):

  optimizer             the optimizer's class name
  param_names_sha256    SHA-256 (hex) of the trainable parameter names in the
                        order the optimizer holds them, joined with "\\n"
  optimizer_state_keys  sorted union of the per-parameter state keys present
                        right now ([] for a fresh optimizer)
  hparams               hyperparameters of the first parameter group
"""
import hashlib
import math
import numbers

# the hyperparameters each known optimizer reports (first parameter group)
HPARAMS = {
    'Adam': ('lr', 'betas', 'weight_decay', 'eps'),
    'AdamW': ('lr', 'betas', 'weight_decay', 'eps'),
    'NAdam': ('lr', 'betas', 'weight_decay', 'eps', 'momentum_decay'),
    'SGD': ('lr', 'momentum', 'dampening', 'weight_decay', 'nesterov'),
    'RMSprop': ('lr', 'alpha', 'eps', 'weight_decay', 'momentum'),
}
# group entries that are switches of the implementation, not hyperparameters
_NOT_HPARAMS = {'params', 'foreach', 'maximize', 'capturable', 'differentiable', 'fused',
                'initial_lr', 'name'}


def _plain(v):
    """A JSON-able copy of a hyperparameter value (tensors become floats)."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, numbers.Integral):
        return int(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else str(f)


def optimizer_name(optimizer):
    return type(optimizer).__name__


def param_names(model, optimizer):
    """Trainable parameter names in the order the optimizer holds them.  A
    parameter the model does not name appears as "?" + its shape."""
    names = {}
    if model is not None:
        for n, p in model.named_parameters():
            names.setdefault(id(p), n)
    out = []
    for g in optimizer.param_groups:
        for p in g['params']:
            if not getattr(p, 'requires_grad', True):
                continue
            n = names.get(id(p))
            if n is None:
                n = '?' + 'x'.join(str(s) for s in tuple(getattr(p, 'shape', ())))
            out.append(n)
    return out


def param_names_sha256(model, optimizer):
    return hashlib.sha256('\n'.join(param_names(model, optimizer)).encode()).hexdigest()


def state_keys(optimizer):
    keys = set()
    for st in optimizer.state.values():
        keys.update(str(k) for k in st)
    return sorted(keys)


def hparams(optimizer):
    g = optimizer.param_groups[0]
    wanted = HPARAMS.get(optimizer_name(optimizer))
    if wanted is None:
        wanted = [k for k in g if k not in _NOT_HPARAMS]
    out = {}
    for k in wanted:
        if k in g:
            v = _plain(g[k])
            if v is not None:
                out[k] = v
    return out


def scheduler_info(scheduler):
    """Class and position of an LR scheduler (stored with the event; the
    resume check does not compare it)."""
    if scheduler is None:
        return None
    info = {'class': type(scheduler).__name__}
    last = getattr(scheduler, 'last_epoch', None)
    if isinstance(last, numbers.Integral):
        info['last_epoch'] = int(last)
    return info


def manifest(model, optimizer, scheduler=None):
    """The manifest of the live objects, as a dict of event attributes."""
    m = {
        'optimizer': optimizer_name(optimizer),
        'param_names_sha256': param_names_sha256(model, optimizer),
        'optimizer_state_keys': state_keys(optimizer),
        'hparams': hparams(optimizer),
    }
    s = scheduler_info(scheduler)
    if s:
        m['scheduler'] = s
    return m
