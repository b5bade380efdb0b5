"""How long `agentctl prune` of ~100k checkpoints delays a live writer's `put` (issue 22).

One run per backend (SQLite, and Postgres with --pg-start or --pg-dsn): make an AgentOS
database with bench/make_db.py (--checkpoints rows over --threads threads), start a
writer process that does AgentOS `put`s (one checkpoint row per transaction, chained
by parent_id, on its own thread `live-writer`) in a loop and times each, let it run
--baseline seconds alone, then run

    agentctl --db DB prune --all --keep-last K --yes --no-backup

and let the writer go on --after seconds. The writer's put latencies are reported
(p50, p99, max) for the puts before the prune and for the puts that overlapped it,
with how many checkpoints the prune removed and how long it took.

    python bench/prune_live_writer.py                   # SQLite only
    python bench/prune_live_writer.py --pg-start        # also a throwaway Postgres

Needs bench/make_db.py's requirements (asyncpg for Postgres) and psycopg for the
Postgres writer. Files go to --workdir (default bench/data/prune-live/).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAKE_DB = os.path.join(ROOT, "bench", "make_db.py")
THREAD = "live-writer"


# ---- the writer (a child process) -------------------------------------------------------


def _row(step: int, parent: str | None) -> tuple[Any, ...]:
    cid = f"ckpt-{THREAD}-{step}-{os.getpid():x}"
    state = {"step": step, "counter": step, "notes": ["n"] * 8}
    msgs = [{"role": "assistant", "content": f"step {step} of the live writer"}]
    return (
        THREAD,
        cid,
        parent,
        step,
        time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
        json.dumps(["llm_call"]),
        f"[assistant] step {step}",
        json.dumps(msgs),
        json.dumps(state),
        "{}",
        "agent",
    )


COLS = (
    "thread_id, checkpoint_id, parent_id, step, created_at, tags, summary, messages_blob, "
    "state_blob, tools_blob, next_node"
)


def writer(kind: str, target: str, out: str, stop: str, interval: float) -> None:
    """Put checkpoints until the file `stop` exists; one line per put to `out`:
    wall-clock start (s) and latency (ms)."""
    if kind == "sqlite":
        conn: Any = sqlite3.connect(target, isolation_level=None, timeout=60)
        conn.execute("PRAGMA busy_timeout = 60000")
        mark = "?"
    else:
        import psycopg

        conn = psycopg.connect(target, autocommit=True)
        mark = "%s"
    sql = f"INSERT INTO checkpoints ({COLS}) VALUES ({', '.join([mark] * 11)})"
    parent: str | None = None
    step = 0
    with open(out, "w") as fh:
        while not os.path.exists(stop):
            step += 1
            row = _row(step, parent)
            t0 = time.time()
            p0 = time.perf_counter()
            if kind == "sqlite":
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(sql, row)
                conn.execute("COMMIT")
            else:
                with conn.transaction():
                    conn.execute(sql, row)
            fh.write(f"{t0:.6f} {(time.perf_counter() - p0) * 1000:.3f}\n")
            parent = row[1]
            time.sleep(interval)
    conn.close()


# ---- the run ----------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "puts": len(values),
        "p50_ms": round(pct(values, 0.50), 2),
        "p99_ms": round(pct(values, 0.99), 2),
        "max_ms": round(max(values), 2) if values else None,
        "mean_ms": round(statistics.fmean(values), 2) if values else None,
    }


def count(kind: str, target: str) -> int:
    if kind == "sqlite":
        with sqlite3.connect(target) as c:
            return int(
                c.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id <> ?", (THREAD,)).fetchone()[0]
            )
    import psycopg

    with psycopg.connect(target) as c:
        return int(
            c.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id <> %s", (THREAD,)).fetchone()[0]
        )


def one_run(kind: str, target: str, args: argparse.Namespace) -> dict[str, Any]:
    out = os.path.join(args.workdir, f"puts-{kind}.txt")
    stop = os.path.join(args.workdir, f"stop-{kind}")
    if os.path.exists(stop):
        os.remove(stop)
    before = count(kind, target)
    w = subprocess.Popen([sys.executable, __file__, "_writer", kind, target, out, stop, str(args.interval)])
    time.sleep(args.baseline)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.time()
    pr = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentctl",
            "--db",
            target,
            "prune",
            "--all",
            "--keep-last",
            str(args.keep_last),
            "--yes",
            "--no-backup",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    t1 = time.time()
    time.sleep(args.after)
    open(stop, "w").close()
    w.wait(timeout=120)
    if pr.returncode != 0:
        raise SystemExit(f"prune failed (exit {pr.returncode}): {pr.stderr.strip()[-500:]}")
    if w.returncode != 0:
        raise SystemExit(f"the writer failed (exit {w.returncode})")
    alone: list[float] = []
    during: list[float] = []
    after: list[float] = []
    with open(out) as fh:
        for line in fh:
            start, ms = (float(x) for x in line.split())
            end = start + ms / 1000
            if end < t0:
                alone.append(ms)
            elif start <= t1:
                during.append(ms)
            else:
                after.append(ms)
    return {
        "backend": kind,
        "removed": before - count(kind, target),
        "prune_seconds": round(t1 - t0, 2),
        "without_prune": summary(alone),
        "during_prune": summary(during),
        "after_prune": summary(after),
    }


def make(kind: str, target: str, args: argparse.Namespace) -> None:
    extra = ["--checkpoints", str(args.checkpoints), "--threads", str(args.threads), "--big-mb", "1"]
    if kind == "sqlite":
        extra.append("--replace")
    subprocess.run([sys.executable, MAKE_DB, kind, target, *extra], check=True, stdout=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_writer":
        writer(argv[1], argv[2], argv[3], argv[4], float(argv[5]))
        return 0
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--checkpoints", type=int, default=102_000, help="rows make_db writes (default 102000)")
    p.add_argument("--threads", type=int, default=100, help="threads make_db spreads them over (default 100)")
    p.add_argument("--keep-last", type=int, default=5, help="prune --keep-last (default 5)")
    p.add_argument("--baseline", type=float, default=8.0, help="seconds the writer runs before the prune")
    p.add_argument("--after", type=float, default=2.0, help="seconds the writer runs after it")
    p.add_argument("--interval", type=float, default=0.005, help="writer's pause between puts (s)")
    p.add_argument("--workdir", default=os.path.join(ROOT, "bench", "data", "prune-live"))
    p.add_argument("--no-sqlite", action="store_true", help="skip the SQLite run")
    p.add_argument(
        "--pg-start",
        action="store_true",
        help="also Postgres: a throwaway server (tests/support/pgserver.py), stopped afterwards",
    )
    p.add_argument(
        "--pg-dsn",
        help="also Postgres: an empty database to load and prune (its checkpoints table is replaced)",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    args = p.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    results = []
    if not args.no_sqlite:
        db = os.path.join(args.workdir, "prune-live.db")
        make("sqlite", db, args)
        results.append(one_run("sqlite", db, args))
    server = None
    try:
        dsn = args.pg_dsn
        if args.pg_start:
            sys.path.insert(0, ROOT)
            from tests.support import pgserver

            server = pgserver.start()
            subprocess.run(
                ["psql", server.dsn, "-X", "-q", "-c", "CREATE DATABASE prunelive"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            dsn = server.dsn.rsplit("/", 1)[0] + "/prunelive"
        if dsn:
            make("postgres", dsn, args)
            results.append(one_run("postgres", dsn, args))
    finally:
        if server is not None:
            server.stop()
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(
        "| backend | removed | prune s | puts alone p50 / p99 / max ms | during prune p50 / p99 / max ms "
        "(puts) |"
    )
    print("|---|---:|---:|---|---|")
    for r in results:
        a, d = r["without_prune"], r["during_prune"]
        print(
            f"| {r['backend']} | {r['removed']:,} | {r['prune_seconds']} | {a['p50_ms']} / {a['p99_ms']} / "
            f"{a['max_ms']} | {d['p50_ms']} / {d['p99_ms']} / {d['max_ms']} ({d['puts']}) |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
