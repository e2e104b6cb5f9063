"""One daemon per database and per socket: a second gradwatchd started by
mistake must fail loudly and leave the first one whole (its socket, its
database); a socket file left by a killed daemon is taken over.  The probe
of an old socket never blocks (a listener with a full backlog is "in use"),
and a stopping daemon removes only the socket file it made, never one
another instance bound at the same path since (issue 22 item 8)."""
import os
import socket
import subprocess
import tempfile
import unittest

from gwtest import Daemon, GRADWATCHD, free_port


def run_second(*args):
    return subprocess.run([GRADWATCHD] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=30)


class Instances(unittest.TestCase):
    def assert_alive(self, d):
        self.assertEqual(d.get('/healthz')[0], 200)
        d.send_unix(b'{"run":"alive","step":1,"loss":1}\n')
        d.wait_committed("SELECT count(*) FROM records WHERE run_id = (SELECT id FROM runs WHERE name = 'alive')", 1)

    def test_second_instance_on_the_same_database(self):
        with Daemon() as d:
            r = run_second('--db', d.db, '--socket', d.sock + '2', '--tcp', 'off', '--udp', 'off',
                           '--http', '127.0.0.1:%d' % free_port())
            self.assertNotEqual(r.returncode, 0)
            out = r.stdout.decode()
            self.assertIn('in use by another gradwatchd', out)
            self.assertIn('pid %d' % d.proc.pid, out)
            self.assertTrue(os.path.exists(d.sock))
            self.assert_alive(d)

    def test_second_instance_on_the_same_socket(self):
        with Daemon() as d:
            other = os.path.join(d.dir, 'other.db')
            r = run_second('--db', other, '--socket', d.sock, '--tcp', 'off', '--udp', 'off',
                           '--http', '127.0.0.1:%d' % free_port())
            self.assertNotEqual(r.returncode, 0)
            self.assertIn('another process is listening', r.stdout.decode())
            self.assertTrue(os.path.exists(d.sock))
            self.assert_alive(d)

    def test_stale_socket_is_taken_over(self):
        d = Daemon()
        # a socket file nobody listens on, as a SIGKILLed daemon leaves it
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(d.sock)
        s.close()
        self.assertTrue(os.path.exists(d.sock))
        with d:
            self.assert_alive(d)
            self.assertIn('removing the stale socket', d.logtext())

    def test_a_listener_with_a_full_backlog_is_in_use_and_does_not_hang(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'gw.sock')
            lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            lst.bind(path)
            lst.listen(0)                    # never accepts: the backlog fills
            fillers = []
            for _ in range(64):
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                c.setblocking(False)
                try:
                    c.connect(path)
                except BlockingIOError:
                    c.close()
                    break
                fillers.append(c)
            else:
                self.skipTest('the backlog never filled')
            try:
                # before the fix: a blocking connect, the timeout ends it
                r = run_second('--db', os.path.join(tmp, 'x.db'), '--socket', path, '--tcp', 'off',
                               '--udp', 'off', '--http', 'off')
            finally:
                for c in fillers:
                    c.close()
                lst.close()
            self.assertNotEqual(r.returncode, 0)
            self.assertIn('another process is listening', r.stdout.decode())
            self.assertTrue(os.path.exists(path))

    def test_stopping_leaves_a_socket_another_instance_bound_since(self):
        a = Daemon()
        with a:
            os.unlink(a.sock)               # someone removed it; a second daemon takes the path
            b = Daemon(args=['--socket', a.sock, '--tcp', 'off', '--udp', 'off'])
            with b:
                ino = os.stat(a.sock).st_ino
                a.stop()
                self.assertIn('no longer the socket this daemon made', a.logtext())
                self.assertTrue(os.path.exists(a.sock), "the first daemon removed the second's socket")
                self.assertEqual(os.stat(a.sock).st_ino, ino)
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
                    c.connect(a.sock)
                    c.sendall(b'{"run":"b","step":1,"loss":1}\n')
                b.wait_committed("SELECT count(*) FROM records", 1)
            self.assertFalse(os.path.exists(a.sock))   # b removed its own


if __name__ == '__main__':
    unittest.main()
