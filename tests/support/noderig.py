"""The Node rig: the JavaScript agent frameworks (LangGraph.js, ...) for the format tests.

`tests/node/package.json` + its committed `package-lock.json` name the packages. The
session fixture `node_modules` runs `npm ci --no-audit --no-fund` once into a cache
directory keyed by the hash of those two files and of node's ABI (a native module such as
better-sqlite3 is built for one node), `~/.cache/agentctl-tests/node-<hash>` (or under
`AGENTCTL_TEST_NODE_CACHE`), behind a file lock so that xdist workers don't race; later
sessions find it done. `run_node(script, *args, env=...)` runs a `.mjs` (its text, or a
file) from inside that directory, so that its `import`s resolve to the locked packages.
`served(script, *args)` runs a script that exports `main(argv)` in this process's one
long-lived node (`tests/node/serve.mjs`): the packages load once per xdist worker, not
once per call (~0.5 s each); the script's `main` opens and closes its savers per call.

Without node 20+ and npm the tests that need the rig are skipped with the reason, except
when `AGENTCTL_REQUIRE_NODE=1` (CI), where that is a failure (as `AGENTCTL_REQUIRE_PG=1`).
"""

from __future__ import annotations

import atexit
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.rig import REPO, fast_tier_refuses, rig_cache

NODE_DIR = REPO / "tests" / "node"
FILES = ("package.json", "package-lock.json")
REQUIRE_NODE = os.environ.get("AGENTCTL_REQUIRE_NODE") == "1"
# @langchain/core 1.x and better-sqlite3 12 need node 20 (Debian 12's own nodejs is 18)
MIN_NODE = 20
# the first `npm ci` may build better-sqlite3 from source (no prebuilt binary reachable):
# minutes on a busy machine
NPM_TIMEOUT = 1800
_DONE = ".agentctl-npm-ci-done"


class NodeMissing(RuntimeError):
    """No usable node / npm on this machine (a skip, or a failure under AGENTCTL_REQUIRE_NODE)."""


@functools.cache  # once per process (a `node -p` run each time was ~0.1 s per script run)
def node_abi() -> str:
    """`node`'s version and module ABI ("20.20.2-115"); NodeMissing without node 20+ and npm."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        raise NodeMissing(
            f"node and npm not found (the JavaScript stores' tests need node {MIN_NODE}+ and npm)"
        )
    try:
        out = subprocess.run(
            [node, "-p", "process.versions.node + '-' + process.versions.modules"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise NodeMissing(f"node did not run: {exc}") from exc
    m = re.fullmatch(r"(\d+)\.\d+\.\d+-\d+", out.stdout.strip())
    if out.returncode != 0 or not m:
        raise NodeMissing(f"node did not run: {(out.stderr or out.stdout).strip()[-300:]}")
    if int(m.group(1)) < MIN_NODE:
        raise NodeMissing(
            f"node {out.stdout.strip().split('-')[0]} is too old (the tests need node {MIN_NODE}+)"
        )
    return out.stdout.strip()


def cache_root() -> Path:
    return rig_cache("AGENTCTL_TEST_NODE_CACHE")


def rig_dir(abi: str | None = None) -> Path:
    """The cache directory of this lock file and this node: where `npm ci` installs."""
    h = hashlib.sha256()
    for name in FILES:
        h.update((NODE_DIR / name).read_bytes())
    h.update((abi or node_abi()).encode())
    return cache_root() / f"node-{h.hexdigest()[:16]}"


def install() -> Path:
    """`npm ci` into rig_dir() unless done already (by an earlier session or another worker)."""
    root = rig_dir()
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{root}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other workers wait here for the first
        if (root / _DONE).exists():
            return root
        shutil.rmtree(root, ignore_errors=True)  # a half-done install of an interrupted run
        root.mkdir()
        for name in FILES:
            shutil.copyfile(NODE_DIR / name, root / name)
        try:
            r = subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=NPM_TIMEOUT,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise RuntimeError(f"npm ci did not finish: {exc}") from exc
        if r.returncode != 0:
            raise RuntimeError(f"npm ci failed in {root}: {(r.stderr or r.stdout).strip()[-800:]}")
        (root / _DONE).write_text("ok\n")
        return root


@pytest.fixture(scope="session")
def node_modules(request: pytest.FixtureRequest) -> Path:
    """The installed packages' directory (npm ci once per lock file); skips without node."""
    fast_tier_refuses(request, "the Node rig")
    try:
        root = install()
    except RuntimeError as exc:  # NodeMissing, or npm ci failed
        if REQUIRE_NODE:
            pytest.fail(f"AGENTCTL_REQUIRE_NODE=1 but {exc}")
        pytest.skip(str(exc))
    return root / "node_modules"


def run_node(
    script: str | Path,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    check: bool = True,
) -> subprocess.CompletedProcess:
    """Run a `.mjs` (a Path, or its text) with node from the rig's directory, so that its
    imports resolve to the locked packages (ESM resolves from the script's own place,
    hence the copy there; NODE_PATH serves `require`). Needs the `node_modules` fixture.
    `env` adds to the environment. A non-zero exit fails the test unless check=False."""
    root = rig_dir()
    runs = root / "runs"
    runs.mkdir(exist_ok=True)
    text = script.read_text() if isinstance(script, Path) else script
    path = runs / f"{uuid.uuid4().hex}.mjs"
    path.write_text(text)
    full_env = {**os.environ, "NODE_PATH": str(root / "node_modules"), **(env or {})}
    try:
        r = subprocess.run(
            ["node", str(path), *args],
            cwd=root,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    finally:
        path.unlink(missing_ok=True)
    if check and r.returncode != 0:
        pytest.fail(
            f"node {script if isinstance(script, Path) else '<script>'} exited {r.returncode}:\n"
            f"{r.stderr.strip()[-2000:]}"
        )
    return r


def _script_file(root: Path, script: str | Path) -> Path:
    """The script's text as a file in the rig's directory (its imports resolve there), named
    by the text's hash: written once, and the server's module cache never serves stale text."""
    text = script.read_text() if isinstance(script, Path) else script
    runs = root / "runs"
    runs.mkdir(exist_ok=True)
    path = runs / f"served-{hashlib.sha256(text.encode()).hexdigest()[:16]}.mjs"
    if not path.exists():
        tmp = runs / f"{uuid.uuid4().hex}.tmp"
        tmp.write_text(text)
        os.replace(tmp, path)  # another worker may write the same file: whole, either way
    return path


class NodeServer:
    """One `node tests/node/serve.mjs` process: each request a JSON line on its stdin
    ({id, script, args}), each answer a JSON line on its own pipe ({id, ok} or {id, error}); what the
    scripts print goes to stderr (a file), so it cannot garble an answer."""

    def __init__(self) -> None:
        self.root = rig_dir()
        self.stderr = tempfile.TemporaryFile()
        r, w = os.pipe()
        self.proc = subprocess.Popen(
            ["node", str(_script_file(self.root, NODE_DIR / "serve.mjs")), str(w)],
            cwd=self.root,
            env={**os.environ, "NODE_PATH": str(self.root / "node_modules")},
            stdin=subprocess.PIPE,
            stdout=self.stderr,
            stderr=self.stderr,
            pass_fds=(w,),
            text=True,
        )
        os.close(w)
        self.answers = os.fdopen(r, encoding="utf-8")
        self.calls = 0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, script: str | Path, *args: str, timeout: float = 120) -> Any:
        path = _script_file(self.root, script)
        assert self.proc.stdin is not None
        self.calls += 1
        self.proc.stdin.write(json.dumps({"id": self.calls, "script": str(path), "args": list(args)}) + "\n")
        self.proc.stdin.flush()
        timer = threading.Timer(timeout, self.proc.kill)
        timer.start()
        try:  # an answer to an earlier call (one a test stopped waiting for) is skipped
            while (line := self.answers.readline()) and json.loads(line)["id"] != self.calls:
                pass
        finally:
            timer.cancel()
        name = script.name if isinstance(script, Path) else "<script>"
        if not line:
            self.proc.wait()
            self.stderr.seek(0)
            err = self.stderr.read().decode(errors="replace").strip()[-2000:]
            pytest.fail(f"node server died (exit {self.proc.returncode}) running {name}:\n{err}")
        answer = json.loads(line)
        if "error" in answer:
            pytest.fail(f"node {name} failed:\n{answer['error'][-2000:]}")
        return answer["ok"]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()  # serve.mjs ends at the end of its input
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.answers.close()
        self.stderr.close()


_server: NodeServer | None = None


def served(script: str | Path, *args: str, timeout: float = 120) -> Any:
    """`main(args)` of a `.mjs` (a Path, or its text) that exports it, run in this process's
    node server (started at the first call, ended at exit; started again if it died): its
    result, as JSON. An error fails the test. Needs the `node_modules` fixture."""
    global _server
    if _server is None or not _server.alive():
        if _server is None:
            atexit.register(lambda: _server.close() if _server else None)
        else:
            _server.close()
        _server = NodeServer()
    return _server.run(script, *args, timeout=timeout)
