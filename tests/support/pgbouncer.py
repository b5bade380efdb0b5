"""A throwaway pgbouncer in transaction mode in front of the rig's Postgres server.

`start(server_dsn)` writes a config in a temp dir (every database of the server behind
one wildcard entry, `pool_mode = transaction`, `auth_type = trust` with a userlist
holding the server's password, which pgbouncer logs in with; `ignore`: the startup
parameters it drops rather than refuses), runs `pgbouncer -d` on a
free port (as the `postgres` user when we are root, as pgserver.py runs the server) and
returns a `Bouncer`; `stop()` ends that process (by its pid file) and removes the dir.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from tests.support.pgserver import failed, free_port


def find_binary() -> str | None:
    return shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if os.access(p, os.X_OK)), None
    )


@dataclass
class Bouncer:
    root: str
    port: int
    user: str
    password: str

    def dsn(self, dbname: str) -> str:
        """A DSN of database `dbname` through the pooler."""
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/{dbname}"

    def stop(self) -> None:
        try:
            with open(os.path.join(self.root, "pid")) as fh:
                pid = int(fh.read().strip())
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                os.kill(pid, 0)
                time.sleep(0.05)
        except (OSError, ValueError):
            pass
        shutil.rmtree(self.root, ignore_errors=True)


def start(server_dsn: str, binary: str | None = None, ignore: str = "") -> Bouncer:
    """`ignore`: pgbouncer's ignore_startup_parameters (the startup parameters it takes
    and drops rather than refuses)."""
    binary = binary or find_binary()
    if not binary:
        raise RuntimeError("no pgbouncer binary found")
    parts = urlsplit(server_dsn)
    user, password = parts.username or "postgres", parts.password or ""
    root = tempfile.mkdtemp(prefix="agentctl-pgbouncer-")
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    bouncer = Bouncer(root, free_port(), user, password)
    with open(os.path.join(root, "userlist.txt"), "w") as fh:
        fh.write(f'"{user}" "{password}"\n')
    with open(os.path.join(root, "pgbouncer.ini"), "w") as fh:
        fh.write(f"""[databases]
* = host={parts.hostname or "127.0.0.1"} port={parts.port or 5432}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {bouncer.port}
unix_socket_dir =
auth_type = trust
auth_file = {root}/userlist.txt
pool_mode = transaction
max_client_conn = 400
default_pool_size = 20
logfile = {root}/log
pidfile = {root}/pid
ignore_startup_parameters = {ignore}
""")
    for name in ("userlist.txt", "pgbouncer.ini"):
        if as_user:
            shutil.chown(os.path.join(root, name), "postgres")
    r = subprocess.run(
        [*as_user, binary, "-d", os.path.join(root, "pgbouncer.ini")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=root,
    )
    if r.returncode != 0:
        failed(root, "pgbouncer did not start", r)
    import socket

    for _ in range(200):  # until it listens
        try:
            socket.create_connection(("127.0.0.1", bouncer.port), timeout=0.2).close()
            return bouncer
        except OSError:
            time.sleep(0.05)
    bouncer.stop()
    raise RuntimeError("pgbouncer did not listen on its port")
