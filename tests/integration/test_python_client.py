"""The Python client (contrib/python) against the real gradwatchd: delivery
over the Unix socket and the UDP fallback, drops counted and reported,
never raising into the training loop, manifests in the trace format, the
resume gate, which rank of a distributed job sends (the environment, a
no-op on other ranks, all_ranks), the Hugging Face and Lightning callbacks (against minimal
stand-ins of their base classes: neither framework is packaged for Debian
12), the plain-loop example with real PyTorch, and the accounting of
client.log() in a tight loop with the daemon up, down and slow.  The
transports themselves (HTTP, UDP, fallback, tokens, environment) are
tested in test_python_transports.py."""
import hashlib
import io
import json
import logging
import os
import subprocess
import sys
import types
import unittest

from gwtest import CONTRIB_PYTHON, Daemon, torch_python, wait_for

sys.path.insert(0, CONTRIB_PYTHON)
import gradwatch  # noqa: E402
from gradwatch import manifest as gwm  # noqa: E402


# ---- torch-shaped stand-ins (the client never imports torch) ------------------------------

class FT:
    """A scalar 'tensor': what the callbacks call on gradients and losses."""

    def __init__(self, v):
        self.v = float(v)

    def detach(self):
        return self

    def float(self):
        return self

    def pow(self, k):
        return FT(self.v ** k)

    def sum(self):
        return self

    def sqrt(self):
        return FT(self.v ** 0.5)

    def __add__(self, o):
        return FT(self.v + o.v)

    def __float__(self):
        return self.v


class Param:
    def __init__(self, shape, requires_grad=True):
        self.shape = shape
        self.requires_grad = requires_grad
        self.grad = FT(0.5)


class Model:
    def __init__(self, names):
        self.params = [(n, Param((4, 4))) for n in names]

    def named_parameters(self):
        return iter(self.params)


class AdamW:
    def __init__(self, model, lr=1e-3, betas=(0.9, 0.95), weight_decay=0.05, eps=1e-8):
        self.param_groups = [{'params': [p for _, p in model.params], 'lr': lr, 'betas': betas,
                              'weight_decay': weight_decay, 'eps': eps, 'amsgrad': False,
                              'foreach': None, 'maximize': False, 'capturable': False}]
        self.state = {}

    def fill_state(self):
        for p in self.param_groups[0]['params']:
            self.state[p] = {'step': FT(10), 'exp_avg': 0, 'exp_avg_sq': 0}


class SGD(AdamW):
    def __init__(self, model):
        super().__init__(model)
        self.param_groups[0] = {'params': self.param_groups[0]['params'], 'lr': 0.1, 'momentum': 0.9,
                                'dampening': 0, 'weight_decay': 0, 'nesterov': False}


def client(d, run, **kw):
    kw.setdefault('address', d.sock)
    kw.setdefault('udp', '127.0.0.1:%d' % d.port)
    kw.setdefault('http', '127.0.0.1:%d' % d.http_port)
    return gradwatch.Client(run=run, **kw)


def rows(d, run):
    return d.sql("SELECT r.step, r.loss, r.extra FROM records r JOIN runs u ON u.id=r.run_id "
                 "WHERE u.name=? ORDER BY r.id", (run,))


def events(d, run):
    return d.sql("SELECT e.name, e.step, e.attrs FROM events e JOIN runs u ON u.id=e.run_id "
                 "WHERE u.name=? ORDER BY e.id", (run,))


def wait_rows(d, run, n, timeout=60):
    """The run's rows once there are at least n."""
    return wait_for(lambda: len(rows(d, run)) >= n and rows(d, run), timeout, '%d rows of %s' % (n, run))


class Manifest(unittest.TestCase):
    def test_fields_in_the_trace_format(self):
        m = Model(['a.weight', 'a.bias', 'frozen'])
        m.params[2][1].requires_grad = False
        opt = AdamW(m)
        got = gwm.manifest(m, opt)
        self.assertEqual(got['optimizer'], 'AdamW')
        self.assertEqual(got['param_names_sha256'], hashlib.sha256(b'a.weight\na.bias').hexdigest())
        self.assertEqual(got['optimizer_state_keys'], [])
        self.assertEqual(got['hparams'], {'lr': 1e-3, 'betas': [0.9, 0.95], 'weight_decay': 0.05,
                                          'eps': 1e-8})
        opt.fill_state()
        self.assertEqual(gwm.manifest(m, opt)['optimizer_state_keys'], ['exp_avg', 'exp_avg_sq', 'step'])
        self.assertEqual(gwm.hparams(SGD(m)), {'lr': 0.1, 'momentum': 0.9, 'dampening': 0,
                                               'weight_decay': 0, 'nesterov': False})
        # the optimizer's order, not the model's
        opt.param_groups[0]['params'].reverse()
        self.assertEqual(gwm.param_names(m, opt), ['a.bias', 'a.weight'])

    def test_no_torch_import(self):
        code = ('import sys; sys.path.insert(0, %r); import gradwatch, gradwatch.manifest; '
                'print("torch" in sys.modules)' % CONTRIB_PYTHON)
        out = subprocess.run([sys.executable, '-c', code], stdout=subprocess.PIPE).stdout
        self.assertEqual(out.strip(), b'False')


class Delivery(unittest.TestCase):
    def setUp(self):
        self.d = Daemon().start()

    def tearDown(self):
        self.d.close()

    def test_every_step_arrives_over_the_socket(self):
        c = client(self.d, 'sock')
        for s in range(1, 1001):
            c.log(s, loss=2.0 - s / 1000, grad_norm=0.5, lr=1e-3, throughput=FT(100))
        c.close()
        got = wait_rows(self.d, 'sock', 1000)
        self.assertEqual([r[0] for r in got], list(range(1, 1001)))
        self.assertEqual(c.stats()['sent'], 1001)       # and close()'s run_finished
        self.assertEqual(c.stats()['logged'], 1001)
        self.assertEqual(wait_for(lambda: events(self.d, 'sock'), 60, 'the run_finished event'),
                         [('run_finished', 1000, '{"reason":"closed"}')])
        self.assertEqual(c.stats()['dropped'] + c.stats()['lost'], 0)

    def test_udp_fallback_when_the_socket_is_missing(self):
        c = client(self.d, 'udp', address=os.path.join(self.d.dir, 'nobody.sock'))
        for s in range(1, 201):
            c.log(s, loss=1.0)
        c.close(finished=False)
        self.assertEqual(len(wait_rows(self.d, 'udp', 200)), 200)
        self.assertEqual(c.stats()['sent_unconfirmed'], 200)

    def test_drops_are_counted_and_reported_to_the_daemon(self):
        # (the sender wakes only at close: one waking in the loop, after
        # 0.5 s on a loaded machine, would send some and drop fewer)
        c = client(self.d, 'drops', max_queue=5, interval=60)
        for s in range(1, 51):
            c.log(s, loss=1.0)
        self.assertEqual(c.stats()['dropped'], 45)
        buf = io.StringIO()
        h = logging.StreamHandler(buf)
        logging.getLogger('gradwatch').addHandler(h)
        try:
            c.close()
        finally:
            logging.getLogger('gradwatch').removeHandler(h)
        self.assertIn('45 metric lines dropped', buf.getvalue())
        got = wait_rows(self.d, 'drops', 5)
        self.assertEqual([r[0] for r in got], [1, 2, 3, 4, 5])
        self.assertEqual(json.loads(got[0][2]), {'gw_client_dropped': 45})

    def test_lost_lines_are_counted_when_nothing_listens(self):
        c = gradwatch.Client(run='lost', address=os.path.join(self.d.dir, 'nobody.sock'), udp='')
        for s in range(1, 101):
            c.log(s, loss=1.0)
        c.close()
        self.assertEqual(c.stats()['lost'], 101)     # and close()'s run_finished

    def test_never_raises_into_the_loop(self):
        c = client(self.d, 'weird')
        c.log(1, loss='not a number', grad_norm=object(), lr=None)
        c.log('x', loss=1.0)
        c.log(2, loss=float('nan'), grad_norm=float('inf'))
        c.checkpoint_saved(3, None, object())     # not an optimizer: counted, not raised
        c.close()
        self.assertGreaterEqual(c.stats()['errors'], 4)
        got = wait_rows(self.d, 'weird', 2)
        self.assertEqual([r[0] for r in got], [1, 2])

    def test_events_and_the_resume_gate(self):
        m = Model(['w', 'b'])
        opt = AdamW(m)
        opt.fill_state()
        c = client(self.d, 'gate')
        for s in range(1, 11):
            c.log(s, loss=1.0)
        c.checkpoint_saved(10, m, opt)
        # a correct resume: the same manifest
        ans = c.check_resume(m, opt, optimizer_state_loaded=True)
        self.assertTrue(ans['ok'])
        self.assertEqual(ans['checkpoint_step'], 10)
        # a fresh optimizer and another weight decay
        fresh = AdamW(m, weight_decay=0.1)
        with self.assertRaises(gradwatch.ResumeError) as cm:
            c.resumed(10, m, fresh, optimizer_state_loaded=True, check=True)
        e = cm.exception
        self.assertEqual(e.checkpoint_step, 10)
        self.assertEqual([d['field'] for d in e.differences], ['optimizer_state_keys', 'hparams.weight_decay'])
        self.assertIn('the optimizer state is empty after the resume', str(e))
        c.close()   # sends run_finished: committed up to commit_interval_ms later

        def events():
            ev = self.d.sql("SELECT e.name, e.step, e.attrs FROM events e JOIN runs u "
                            "ON u.id=e.run_id WHERE u.name='gate' ORDER BY e.id")
            return ev if len(ev) >= 3 else None
        ev = wait_for(events, 60, "the run's three events")
        self.assertEqual([n for n, _, _ in ev], ['checkpoint_saved', 'resumed', 'run_finished'])
        self.assertEqual([s for _, s, _ in ev[:2]], [10, 10])
        attrs = json.loads(ev[1][2])
        self.assertEqual(attrs['checkpoint_step'], 10)
        self.assertEqual(attrs['optimizer_state_keys'], [])
        alerts = self.d.get('/v1/runs/gate/alerts')[1]['alerts']
        self.assertEqual([a['detector'] for a in alerts], ['resume_mismatch'])

    def test_gate_without_a_daemon(self):
        m = Model(['w'])
        c = gradwatch.Client(run='x', address='/nonexistent', udp='', http='127.0.0.1:1')
        self.assertIsNone(c.check_resume(m, AdamW(m), timeout=1))
        with self.assertRaises(gradwatch.GateUnavailable):
            c.check_resume(m, AdamW(m), timeout=1, required=True)
        c.close(timeout=1)


# ---- framework callbacks over stand-ins of their base classes -----------------------------

def install_standins():
    tr = types.ModuleType('transformers')
    tr.TrainerCallback = type('TrainerCallback', (), {})
    sys.modules.setdefault('transformers', tr)
    for name in ('lightning', 'lightning.pytorch', 'lightning.pytorch.callbacks'):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules['lightning.pytorch.callbacks'].Callback = type('Callback', (), {})


class Callbacks(unittest.TestCase):
    def setUp(self):
        install_standins()
        self.d = Daemon().start()
        self.kw = dict(address=self.d.sock, udp='', http='127.0.0.1:%d' % self.d.http_port)

    def tearDown(self):
        self.d.close()

    def test_hf_trainer_callback(self):
        from gradwatch.hf import GradwatchCallback
        args = types.SimpleNamespace(run_name='hf-run', output_dir=self.d.dir, resume_from_checkpoint=None)
        state = types.SimpleNamespace(global_step=0)
        m = Model(['w', 'b'])
        opt = AdamW(m)
        cb = GradwatchCallback(**self.kw)
        cb.on_train_begin(args, state, None, model=m, optimizer=opt, lr_scheduler=None)
        for s in range(1, 21):
            state.global_step = s
            opt.fill_state()
            cb.on_log(args, state, None, logs={'loss': 2.0, 'grad_norm': 0.4, 'learning_rate': 1e-3,
                                               'epoch': 0.1})
            if s == 20:
                os.makedirs(os.path.join(self.d.dir, 'checkpoint-20'))
                open(os.path.join(self.d.dir, 'checkpoint-20', 'optimizer.pt'), 'w').close()
                cb.on_save(args, state, None, model=m, optimizer=opt, lr_scheduler=None)
        cb.on_log(args, state, None, logs={'eval_loss': 1.0})       # not a training step
        cb.on_train_end(args, state, None)
        cb.client.close()
        got = wait_rows(self.d, 'hf-run', 20)
        self.assertEqual(len(got), 20)
        self.assertEqual(self.d.sql("SELECT lr, grad_norm FROM records WHERE step=5")[0], (1e-3, 0.4))
        # the Trainer resumes from checkpoint-20 with a fresh optimizer: the gate stops it
        cb2 = GradwatchCallback(**self.kw)
        with self.assertRaises(gradwatch.ResumeError):
            cb2.on_train_begin(args, state, None, model=m, optimizer=AdamW(m), lr_scheduler=None)
        cb2.client.close()
        ev = self.d.sql("SELECT name, step, attrs FROM events ORDER BY id")
        # train end says the run finished (close() adds nothing after it);
        # cb2 logged nothing, so its close() says nothing
        self.assertEqual([(n, s) for n, s, _ in ev],
                         [('checkpoint_saved', 20), ('run_finished', 20), ('resumed', 20)])
        self.assertEqual(json.loads(ev[1][2]), {'reason': 'train_end'})
        self.assertTrue(json.loads(ev[2][2])['optimizer_state_loaded'])

    def test_callbacks_are_reached_from_import_gradwatch(self):
        # the README: `import gradwatch` then gradwatch.hf.GradwatchCallback()
        # (a fresh interpreter: here both were imported by the tests above)
        code = ('import sys, types\n'
                'tr = types.ModuleType("transformers"); tr.TrainerCallback = object\n'
                'sys.modules["transformers"] = tr\n'
                'for n in ("lightning", "lightning.pytorch", "lightning.pytorch.callbacks"):\n'
                '    sys.modules[n] = types.ModuleType(n)\n'
                'sys.modules["lightning.pytorch.callbacks"].Callback = object\n'
                'import gradwatch\n'
                'assert "gradwatch.hf" not in sys.modules   # no framework import before it is asked for\n'
                'print(gradwatch.hf.GradwatchCallback.__module__, '
                'gradwatch.lightning.GradwatchCallback.__module__)\n')
        r = subprocess.run([sys.executable, '-c', code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=dict(os.environ, PYTHONPATH=CONTRIB_PYTHON), timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertEqual(r.stdout.decode().split(), ['gradwatch.hf', 'gradwatch.lightning'])

    def test_lightning_callback(self):
        from gradwatch.lightning import GradwatchCallback
        m = Model(['w', 'b'])
        opt = AdamW(m)
        trainer = types.SimpleNamespace(global_step=0, optimizers=[opt], lr_scheduler_configs=[],
                                        logger=None)
        cb = GradwatchCallback(run='pl-run', **self.kw)
        cb.on_train_start(trainer, m)
        for s in range(1, 11):
            cb.on_before_optimizer_step(trainer, m, opt)
            opt.fill_state()
            trainer.global_step = s
            cb.on_train_batch_end(trainer, m, {'loss': FT(1.5)}, None, s - 1)
        ck = {}
        cb.on_save_checkpoint(trainer, m, ck)
        cb.on_train_end(trainer, m)
        cb.client.close()
        got = wait_rows(self.d, 'pl-run', 10)
        self.assertEqual(len(got), 10)
        # two gradients of 0.5: norm sqrt(0.5)
        self.assertAlmostEqual(self.d.sql("SELECT grad_norm FROM records WHERE step=3")[0][0], 0.5 ** 0.5)
        # resumed with the optimizer state: the gate lets it through
        cb2 = GradwatchCallback(run='pl-run', **self.kw)
        cb2.on_load_checkpoint(trainer, m, {'optimizer_states': [{}]})
        cb2.on_train_start(trainer, m)
        cb2.client.close()
        self.assertEqual(self.d.get('/v1/runs/pl-run/alerts')[1]['alerts'], [])
        ev = self.d.sql("SELECT name, step, attrs FROM events WHERE name = 'run_finished'")
        self.assertEqual(ev, [('run_finished', 10, '{"reason":"train_end"}')])


# ---- distributed jobs: which rank sends ------------------------------------------------------

class Ranks(unittest.TestCase):
    """The rank from the environment (RANK; LOCAL_RANK alone is not it), a
    rank other than 0 as a no-op that says so once, all_ranks=True sending
    each line with its rank, and the callbacks' own idea of process zero."""
    ENV = ('RANK', 'LOCAL_RANK', 'OMPI_COMM_WORLD_RANK', 'PMI_RANK', 'SLURM_PROCID')

    def setUp(self):
        install_standins()
        self.saved = {k: os.environ.pop(k) for k in self.ENV if k in os.environ}
        self.addCleanup(os.environ.update, self.saved)
        for k in self.ENV:
            self.addCleanup(os.environ.pop, k, None)
        self.d = Daemon().start()
        self.addCleanup(self.d.close)
        self.kw = dict(address=self.d.sock, udp='', http='127.0.0.1:%d' % self.d.http_port)

    def test_rank_from_the_environment(self):
        self.assertIsNone(gradwatch.global_rank())
        os.environ['LOCAL_RANK'] = '1'          # the rank on one node only
        self.assertIsNone(gradwatch.global_rank())
        os.environ['SLURM_PROCID'] = '5'
        self.assertEqual(gradwatch.global_rank(), 5)
        os.environ['RANK'] = '3'                # torchrun's wins
        self.assertEqual(gradwatch.global_rank(), 3)
        self.assertNotIn('torch', sys.modules)  # never imported to find out

    def test_other_ranks_are_quiet_no_ops(self):
        os.environ['RANK'] = '2'
        buf = io.StringIO()
        h = logging.StreamHandler(buf)
        logging.getLogger('gradwatch').addHandler(h)
        logging.getLogger('gradwatch').setLevel(logging.INFO)
        self.addCleanup(logging.getLogger('gradwatch').removeHandler, h)
        c = gradwatch.Client(run='r2', **self.kw)
        self.assertIsNone(c._thread)            # no sender thread, no socket
        m = Model(['w'])
        for s in range(1, 11):
            c.log(s, loss=1.0)
        c.checkpoint_saved(10, m, AdamW(m))
        self.assertTrue(c.flush(1))
        c.close()
        st = c.stats()
        self.assertEqual((st['rank'], st['skipped'], st['sent'], st['logged']), (2, 11, 0, 11))
        self.assertIn('rank=2 (not sending: only rank 0 sends)', repr(c))
        self.assertEqual(buf.getvalue().count('only rank 0 sends'), 1)
        # and rank 0 of the same job sends
        c0 = gradwatch.Client(run='r2', rank=0, **self.kw)
        c0.log(1, loss=1.0)
        c0.close()
        self.assertEqual(len(wait_rows(self.d, 'r2', 1)), 1)
        self.assertEqual(self.d.sql("SELECT count(*) FROM events WHERE name != 'run_finished'"),
                         [(0,)])

    def test_all_ranks_send_with_their_rank(self):
        os.environ['RANK'] = '1'
        c = gradwatch.Client(run='ra', all_ranks=True, **self.kw)
        c0 = gradwatch.Client(run='ra', all_ranks=True, rank=0, **self.kw)
        for s in range(1, 6):
            c0.log(s, loss=1.0)
            c.log(s, loss=1.5)
        c.close()
        c0.close()
        self.d.wait_committed("SELECT count(*) FROM rank_lines", 6)
        self.assertEqual(len(wait_rows(self.d, 'ra', 5)), 5)
        body = json.loads(self.d.sql("SELECT body FROM rank_lines ORDER BY id LIMIT 1")[0][0])
        self.assertEqual((body['rank'], body['step'], body['loss']), (1, 1, 1.5))
        with self.assertRaises(ValueError):
            gradwatch.Client(run='x', rank=-1, **self.kw)

    def test_callbacks_send_from_process_zero_only(self):
        from gradwatch.hf import GradwatchCallback as HF
        from gradwatch.lightning import GradwatchCallback as PL
        args = types.SimpleNamespace(run_name='hf-r', output_dir=self.d.dir,
                                     resume_from_checkpoint=None, process_index=3)
        for zero in (False, True):
            state = types.SimpleNamespace(global_step=1, is_world_process_zero=zero)
            cb = HF(**self.kw)
            cb.on_log(args, state, None, logs={'loss': 2.0})
            cb.on_train_end(args, state, None)
            cb.client.close()
            self.assertEqual(cb.client.rank, 0 if zero else 3)
            m = Model(['w'])
            trainer = types.SimpleNamespace(global_step=1, optimizers=[AdamW(m)],
                                            lr_scheduler_configs=[], logger=None,
                                            is_global_zero=zero, global_rank=0 if zero else 2)
            pl = PL(run='pl-r', **self.kw)
            pl.on_train_batch_end(trainer, m, {'loss': FT(1.5)}, None, 0)
            pl.on_train_end(trainer, m)
            pl.client.close()
            self.assertEqual(pl.client.stats()['skipped'], 0 if zero else 2)
        self.assertEqual(len(wait_rows(self.d, 'hf-r', 1)), 1)
        self.assertEqual(len(wait_rows(self.d, 'pl-r', 1)), 1)


# ---- real PyTorch: the plain loop, and the latency of log() --------------------------------

TORCH = torch_python()


@unittest.skipUnless(TORCH or os.environ.get('CI'), 'no Python with torch (python3-torch)')
class RealTorch(unittest.TestCase):
    def test_plain_loop_example(self):
        with Daemon() as d:
            env = dict(os.environ, PYTHONPATH=CONTRIB_PYTHON, GRADWATCH_SOCKET=d.sock,
                       GRADWATCH_URL='http://127.0.0.1:%d' % d.http_port,
                       GRADWATCH_UDP='127.0.0.1:%d' % d.port)
            ex = os.path.join(CONTRIB_PYTHON, 'examples', 'plain_loop.py')
            ck = os.path.join(d.dir, 'ck.pt')
            for args in (['--steps', '120'], ['--steps', '160', '--resume']):
                r = subprocess.run([TORCH, ex, '--ckpt', ck] + args, env=env, cwd=d.dir,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
                self.assertEqual(r.returncode, 0, r.stdout.decode()[-3000:])
            got = wait_rows(d, 'plain-loop', 120 + 60)
            self.assertEqual([x[0] for x in got], list(range(1, 121)) + list(range(101, 161)))
            ev = d.sql("SELECT name, step, attrs FROM events ORDER BY id")
            # each process ends with close(): run_finished
            self.assertEqual([(n, s) for n, s, _ in ev],
                             [('checkpoint_saved', 50), ('checkpoint_saved', 100), ('run_finished', 120),
                              ('resumed', 100), ('checkpoint_saved', 150), ('run_finished', 160)])
            self.assertEqual(json.loads(ev[2][2]), {'reason': 'closed'})
            saved, resumed = json.loads(ev[1][2]), json.loads(ev[3][2])
            self.assertEqual(saved['optimizer_state_keys'], ['exp_avg', 'exp_avg_sq', 'step'])
            for k in ('optimizer', 'param_names_sha256', 'optimizer_state_keys', 'hparams'):
                self.assertEqual(saved[k], resumed[k], k)
            # the example logs throughput measured on the wall clock: a loaded
            # machine slows the loop, which the stall detector rightly reports;
            # that is not about the resume, and must not fail this test
            alerts = d.get('/v1/runs/plain-loop/alerts')[1]['alerts']
            self.assertEqual([a for a in alerts if a['detector'] != 'stall'], [])

    def test_log_accounting_with_the_daemon_up_down_and_slow(self):
        # how fast log() is, is bench/client_log_latency.py; here: nothing vanishes
        with Daemon(args=['--log-level', 'warn']) as d:
            r = subprocess.run([TORCH, os.path.join(CONTRIB_PYTHON, 'bench_log.py'), '--up', d.sock,
                                '--n', '100000'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr.decode())
            res = {x['case']: x for x in map(json.loads, r.stdout.decode().splitlines())}
        self.assertEqual(set(res), {'up', 'down', 'slow'})
        for case, x in res.items():
            # nothing vanished: every line was sent, dropped or lost, and counted
            self.assertEqual(x['logged'], x['n'], x)
            self.assertEqual(x['sent'] + x['sent_unconfirmed'] + x['dropped'] + x['lost'] + x['invalid'] +
                             x['queued'], x['n'], x)
        self.assertEqual(res['up']['sent'], res['up']['n'])
        self.assertGreater(res['slow']['dropped'], 0)


if __name__ == '__main__':
    unittest.main()
