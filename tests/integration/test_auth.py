"""Bearer tokens: with token files configured, every HTTP route but
/healthz needs a token (read or ingest scope), TCP connections and UDP
datagrams start with an auth line, an ingest token limited to a run glob
cannot write other runs, and the Unix socket relies on its file mode.
A non-loopback address is refused without tokens."""
import http.client
import json
import os
import socket
import subprocess
import unittest

from gwtest import Daemon, read_all

INGEST = 'ingest-token-0123456789abcdef'
TEAM = 'team-a-token-0123456789abcdef'
READ = 'read-token-0123456789abcdef'


def request(d, method, path, body=None, token=None):
    c = http.client.HTTPConnection('127.0.0.1', d.http_port, timeout=30)
    try:
        headers = {'Authorization': 'Bearer ' + token} if token else {}
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        return r.status, r.getheader('WWW-Authenticate'), data
    finally:
        c.close()


class Auth(unittest.TestCase):
    def daemon(self):
        d = Daemon(config={'auth': {'ingest_tokens_file': 'ingest.tokens',
                                    'read_tokens_file': 'read.tokens'}})
        with open(os.path.join(d.dir, 'ingest.tokens'), 'w') as f:
            f.write('# tokens that may write\n%s\n%s team-a-*\n' % (INGEST, TEAM))
        with open(os.path.join(d.dir, 'read.tokens'), 'w') as f:
            f.write('%s\n' % READ)
        return d   # started by `with`

    def count(self, d, run):
        return d.sql('SELECT count(*) FROM records r JOIN runs n ON n.id = r.run_id WHERE n.name = ?',
                     (run,))[0][0]

    def test_http_scopes(self):
        with self.daemon() as d:
            line = b'{"run":"r1","step":1,"loss":1}\n'
            st, www, _ = request(d, 'GET', '/v1/runs')
            self.assertEqual((st, www), (401, 'Bearer realm="gradwatch"'))
            st, _, data = request(d, 'GET', '/v1/runs', token='wrong-token-0123456789')
            self.assertEqual(st, 401)
            self.assertIn(b'not a known token', data)   # not "a token is required"
            st, _, data = request(d, 'GET', '/v1/runs')
            self.assertIn(b'Authorization: Bearer', data)
            self.assertEqual(request(d, 'GET', '/metrics')[0], 401)
            self.assertEqual(request(d, 'POST', '/v1/ingest', line)[0], 401)
            self.assertEqual(request(d, 'POST', '/v1/ingest', line, token=READ)[0], 403)
            self.assertEqual(request(d, 'POST', '/v1/ingest', line, token=INGEST)[0], 200)
            self.assertEqual(request(d, 'GET', '/v1/runs', token=READ)[0], 200)
            self.assertEqual(request(d, 'GET', '/metrics', token=READ)[0], 200)
            self.assertEqual(request(d, 'GET', '/v1/runs/r1', token=INGEST)[0], 200)
            self.assertEqual(self.count(d, 'r1'), 1)

    def test_a_token_limited_to_its_runs(self):
        with self.daemon() as d:
            body = b'{"run":"team-a-1","step":1,"loss":1}\n{"run":"team-b-1","step":1,"loss":1}\n'
            st, _, data = request(d, 'POST', '/v1/ingest', body, token=TEAM)
            res = json.loads(data)
            self.assertEqual((st, res['accepted'], res['rejected']), (422, 1, 1), res)
            self.assertEqual(res['errors'][0]['reason'], 'unauthorized')
            self.assertEqual((self.count(d, 'team-a-1'), self.count(d, 'team-b-1')), (1, 0))

    def test_a_token_limited_to_its_runs_deletes_only_those(self):
        # a team's token may not delete another team's run, nor prune
        # every team's runs; the unrestricted ingest token may do both
        with self.daemon() as d:
            body = b'{"run":"team-a-1","step":1,"loss":1}\n{"run":"team-b-1","step":1,"loss":1}\n'
            self.assertEqual(request(d, 'POST', '/v1/ingest', body, token=INGEST)[0], 200)
            st, _, data = request(d, 'DELETE', '/v1/runs/team-b-1', token=TEAM)
            self.assertEqual(st, 403, data)
            self.assertIn(b'team-b-1', data)
            st, _, data = request(d, 'POST', '/v1/prune?older_than=0', token=TEAM)
            self.assertEqual(st, 403, data)
            self.assertIn(b'team-a-*', data)
            self.assertEqual((self.count(d, 'team-a-1'), self.count(d, 'team-b-1')), (1, 1))
            st, _, data = request(d, 'DELETE', '/v1/runs/team-a-1', token=TEAM)
            self.assertEqual((st, json.loads(data)), (200, {'deleted': ['team-a-1']}))
            st, _, data = request(d, 'DELETE', '/v1/runs/team-b-1', token=INGEST)
            self.assertEqual((st, json.loads(data)), (200, {'deleted': ['team-b-1']}))
            self.assertEqual((self.count(d, 'team-a-1'), self.count(d, 'team-b-1')), (0, 0))

    def test_tcp_udp_unix(self):
        with self.daemon() as d:
            # TCP without the auth line: told why, closed, nothing stored
            with socket.create_connection(('127.0.0.1', d.port)) as s:
                s.sendall(b'{"run":"t","step":1,"loss":1}\n')
                ans = read_all(s)
            self.assertEqual(json.loads(ans.splitlines()[0])['error'], 'unauthorized')
            with socket.create_connection(('127.0.0.1', d.port)) as s:
                s.sendall(('{"auth":"%s"}\n' % READ).encode())
                self.assertIn(b'read token', read_all(s))
            with socket.create_connection(('127.0.0.1', d.port)) as s:
                s.sendall(('{"auth":"%s"}\n{"run":"t","step":1,"loss":1}\n' % INGEST).encode())
                s.shutdown(socket.SHUT_WR)
                self.assertEqual(read_all(s), b'')
            # UDP: each datagram carries the auth line
            d.send_udp([b'{"run":"u","step":1,"loss":1}',
                        ('{"auth":"%s"}\n{"run":"u","step":2,"loss":1}' % INGEST).encode()])
            # the Unix socket: its file mode decides, no token
            d.send_unix(b'{"run":"x","step":1,"loss":1}\n')
            d.wait_committed("SELECT count(*) FROM records", 3)
            self.assertEqual([self.count(d, r) for r in ('t', 'u', 'x')], [1, 1, 1])
            st = json.loads(request(d, 'GET', '/v1/stats', token=READ)[2])
            self.assertEqual(st['transports']['udp']['rejected'], {'unauthorized': 1})
            self.assertEqual(st['transports']['tcp']['rejected'], {'unauthorized': 2})

    def check_config(self, config, args, files=None):
        d = Daemon(config=config, args=args)
        try:
            for name, text in (files or {}).items():
                with open(os.path.join(d.dir, name), 'w') as f:
                    f.write(text)
            r = subprocess.run(d.command() + ['--check-config'], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=30, cwd=d.dir)
            return r.returncode, r.stdout.decode()
        finally:
            d.close()

    def test_remote_binds_need_tokens(self):
        rc, out = self.check_config({'allow_remote': True}, ['--http', '0.0.0.0:7999'])
        self.assertNotEqual(rc, 0)
        self.assertIn('configure "auth"', out)
        rc, out = self.check_config({'allow_remote': True, 'auth': {'ingest_tokens_file': 'x'}},
                                    ['--udp', '0.0.0.0:7999'])
        self.assertNotEqual(rc, 0)
        self.assertIn('UDP cannot be authenticated', out)
        rc, out = self.check_config({'allow_remote': True, 'auth': {'ingest_tokens_file': 'x'}},
                                    ['--http', '0.0.0.0:7999', '--udp', 'off'],
                                    files={'x': 'a-token-of-24-characters\n'})
        self.assertEqual(rc, 0, out)

    def test_check_config_reads_the_token_files(self):
        # --check-config said "configuration OK" for token files that were
        # missing or bad, and the daemon then refused to start with them
        for files, why in (({}, 'cannot read x'), ({'x': 'tooshort\n'}, 'x:1')):
            rc, out = self.check_config({'auth': {'ingest_tokens_file': 'x'}}, [], files=files)
            self.assertEqual(rc, 1, out)
            self.assertIn(why, out)
            self.assertNotIn('configuration OK', out)

    def test_bad_token_files(self):
        d = Daemon(config={'auth': {'ingest_tokens_file': 'short.tokens'}})
        with open(os.path.join(d.dir, 'short.tokens'), 'w') as f:
            f.write('tooshort\n')
        r = subprocess.run(d.command(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30,
                           cwd=d.dir)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('short.tokens:1', r.stdout.decode())
        d.close()
        # a file that never ends (read whole, it took gigabytes and the
        # daemon never started) or a directory: refused with the reason
        # a named pipe would wait for a writer for ever (found by fuzz_config)
        for name, why in (('/dev/zero', 'not a regular file'), ('tokens.d', 'not a regular file'),
                          ('tokens.pipe', 'not a regular file'), ('big.tokens', 'longer than')):
            d = Daemon(config={'auth': {'ingest_tokens_file': name}})
            os.makedirs(os.path.join(d.dir, 'tokens.d'), exist_ok=True)
            os.mkfifo(os.path.join(d.dir, 'tokens.pipe'))
            with open(os.path.join(d.dir, 'big.tokens'), 'w') as f:
                f.write(('#' * 1000 + '\n') * 1100)
            r = subprocess.run(d.command(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=30, cwd=d.dir)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn(why, r.stdout.decode())
            d.close()


if __name__ == '__main__':
    unittest.main()
