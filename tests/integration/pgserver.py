"""A real PostgreSQL for the fleet tests: initdb in a temporary directory,
started with pg_ctl on a free loopback port (and a Unix socket in the same
directory), trust authentication for loopback only, one database
"gradwatch".  As root, the server runs as the unprivileged user "postgres"
(Debian's postgresql package creates it): PostgreSQL refuses to run as
root.  Queried with psql (standard library only: no driver needed).

Also a TCP proxy in front of it that can hold every byte (the network to
PostgreSQL stalled, connections open but silent) and let them go again.

Fails when the binaries are missing (apt-get install postgresql); a
developer without them can set GW_ALLOW_NO_POSTGRESQL=1 to skip instead.
"""
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time

from gwtest import free_port, wait_for


def pg_bindir():
    """The directory of initdb, pg_ctl and postgres (Debian keeps them in
    /usr/lib/postgresql/N/bin), or None."""
    for d in sorted(glob.glob('/usr/lib/postgresql/*/bin'), reverse=True):
        if os.path.exists(os.path.join(d, 'initdb')):
            return d
    found = shutil.which('initdb')
    return os.path.dirname(found) if found else None


SKIP = pg_bindir() is None and os.environ.get('GW_ALLOW_NO_POSTGRESQL') == '1'


class PgServer:
    def __init__(self):
        self.bindir = pg_bindir()
        if not self.bindir:
            raise AssertionError('PostgreSQL is not installed (apt-get install postgresql)')
        self.tmp = tempfile.mkdtemp(prefix='gwpg-')
        os.chmod(self.tmp, 0o755)
        self.data = os.path.join(self.tmp, 'data')
        self.port = free_port()
        self.log = os.path.join(self.tmp, 'postgres.log')
        self.user = None
        if os.geteuid() == 0:
            self.user = 'postgres'
            pw = pwd.getpwnam(self.user)
            os.chown(self.tmp, pw.pw_uid, pw.pw_gid)
        self._run(['initdb', '-D', self.data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8',
                   '--no-sync'])
        with open(os.path.join(self.data, 'postgresql.conf'), 'a') as f:
            f.write("listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\n"
                    "fsync = off\nmax_connections = 50\n" % (self.port, self.tmp))
        self.start()
        self.psql('CREATE DATABASE gradwatch', db='postgres')

    @property
    def dsn(self):
        return 'postgresql://postgres@127.0.0.1:%d/gradwatch' % self.port

    def _cmd(self, argv):
        argv = [os.path.join(self.bindir, argv[0])] + argv[1:]
        if self.user:
            argv = ['runuser', '-u', self.user, '--'] + argv
        return argv

    def _run(self, argv, check=True):
        r = subprocess.run(self._cmd(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           cwd=self.tmp)
        if check and r.returncode != 0:
            raise AssertionError('%s failed:\n%s' % (' '.join(argv), r.stdout.decode(errors='replace')))
        return r

    def start(self):
        self._run(['pg_ctl', '-D', self.data, '-l', self.log, '-w', '-t', '60', 'start'])

    def stop(self, mode='fast'):
        self._run(['pg_ctl', '-D', self.data, '-m', mode, '-w', '-t', '60', 'stop'], check=False)

    def close(self):
        self.stop('immediate')
        shutil.rmtree(self.tmp, ignore_errors=True)

    def psql(self, sql, db='gradwatch'):
        """Rows of sql as lists of strings (NULL as None)."""
        r = subprocess.run(['psql', '-X', '-q', '-A', '-t', '-F', '\t', '-P', 'null=\\N',
                            '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', str(self.port),
                            '-U', 'postgres', '-d', db, '-c', sql],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if r.returncode != 0:
            raise AssertionError('psql %r: %s' % (sql, r.stderr.decode(errors='replace')))
        out = r.stdout.decode()
        return [[None if v == '\\N' else v for v in line.split('\t')]
                for line in out.splitlines() if line]

    def scalar(self, sql, default=None):
        try:
            rows = self.psql(sql)
        except AssertionError:
            return default
        return rows[0][0] if rows else default


class StallProxy:
    """A TCP proxy on a free loopback port to upstream; hold() stops moving
    bytes both ways (connections stay open, nothing arrives), release()
    lets them flow again."""

    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.flowing = threading.Event()
        self.flowing.set()
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(('127.0.0.1', 0))
        self.srv.listen(64)
        self.port = self.srv.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(('127.0.0.1', self.upstream))
            except OSError:
                c.close()
                continue
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                self.flowing.wait()
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def hold(self):
        self.flowing.clear()

    def release(self):
        self.flowing.set()

    def close(self):
        self.closed = True
        self.flowing.set()
        self.srv.close()


def wait_pg(pg, sql, expected, timeout=120, what=None):
    """Poll PostgreSQL until sql's one value equals expected (a deadline,
    not a speed requirement)."""
    return wait_for(lambda: pg.scalar(sql) == str(expected), timeout, what or sql, interval=0.3)
