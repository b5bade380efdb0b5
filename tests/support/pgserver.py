"""A throwaway Postgres server for the tests (and the benchmarks).

`start()` runs `initdb` + `pg_ctl` in a temp dir on a free port (as the `postgres` user
when we are root, since the server refuses to run as root) and returns a `PgServer`;
`stop()` shuts it down and removes the directory.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from typing import NoReturn


def find_bin_dir() -> str | None:
    """The directory holding initdb and pg_ctl, on PATH or under /usr/lib/postgresql."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return os.path.dirname(initdb)
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    for path in candidates:
        d = os.path.dirname(path)
        if os.path.exists(os.path.join(d, "pg_ctl")):
            return d
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PgServer:
    bin_dir: str
    root: str
    port: int
    as_user: list[str]
    password: str = "agentctl-test-pw"

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/postgres"

    @property
    def data(self) -> str:
        return os.path.join(self.root, "data")

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*self.as_user, *args], capture_output=True, text=True, timeout=120, cwd=self.root
        )

    def stop(self) -> None:
        self._run(os.path.join(self.bin_dir, "pg_ctl"), "-D", self.data, "-m", "fast", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


def start(bin_dir: str | None = None) -> PgServer:
    bin_dir = bin_dir or find_bin_dir()
    if not bin_dir:
        raise RuntimeError("no Postgres server binaries (initdb, pg_ctl) found")
    root = tempfile.mkdtemp(prefix="agentctl-pg-")
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    server = PgServer(bin_dir, root, free_port(), as_user)
    pwfile = os.path.join(root, "pw")
    with open(pwfile, "w") as fh:
        fh.write(server.password + "\n")
    if as_user:
        shutil.chown(pwfile, "postgres")
    # TCP logins need the password (so a wrong one can be tested); the socket is trusted.
    r = server._run(
        os.path.join(bin_dir, "initdb"),
        "-D",
        server.data,
        "--auth-local=trust",
        "--auth-host=scram-sha-256",
        f"--pwfile={pwfile}",
        "-U",
        "postgres",
        "-E",
        "UTF8",
        "--locale=C.UTF-8" if _has_c_utf8() else "--locale=C",
    )
    if r.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {r.stderr.strip()[-500:]}")
    opts = (
        f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 "
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
        "-c max_connections=200"
    )
    r = server._run(
        os.path.join(bin_dir, "pg_ctl"),
        "-D",
        server.data,
        "-o",
        opts,
        "-l",
        os.path.join(root, "log"),
        "-w",
        "-t",
        "60",
        "start",
    )
    if r.returncode != 0:
        failed(root, "pg_ctl start failed", r)
    return server


def failed(root: str, what: str, r: subprocess.CompletedProcess) -> NoReturn:
    """A server of the rig did not start: remove its directory, raise RuntimeError with
    the end of its stderr and of its log (ROOT/log)."""
    log = ""
    try:
        with open(os.path.join(root, "log")) as fh:
            log = fh.read()[-800:]
    except OSError:
        pass
    shutil.rmtree(root, ignore_errors=True)
    raise RuntimeError(f"{what}: {r.stderr.strip()[-300:]} {log}")


def _has_c_utf8() -> bool:
    try:
        out = subprocess.run(["locale", "-a"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.lower() in ("c.utf8", "c.utf-8") for line in out.split())
