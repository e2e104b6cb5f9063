"""One daemon per database and per socket: a second gradwatchd started by
mistake must fail loudly and leave the first one whole (its socket, its
database); a socket file left by a killed daemon is taken over."""
import os
import socket
import subprocess
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
        with d.start():
            self.assert_alive(d)
            self.assertIn('removing the stale socket', d.logtext())


if __name__ == '__main__':
    unittest.main()
