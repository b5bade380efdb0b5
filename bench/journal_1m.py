"""Rewind, hard rewind, undo and redo on a 1M-row database, two checkouts side by side
(issue 20: "performance unchanged or better, before/after in one run").

    python bench/make_db.py sqlite /tmp/P.db --long-steps 100000          # once, 30 s
    git worktree add --detach /tmp/before c3dcdd5                           # the old op log
    python bench/journal_1m.py --db /tmp/P.db --before /tmp/before [--runs 5]
    python bench/journal_1m.py --db /tmp/lg1m.db --before /tmp/before       # LangGraph (make_langgraph_db.py)

Each side works on its own copy of the database (the old code's op log and the journal
are not mixed). A round is, per side in turn: `rewind REF --yes` (REF: the long thread's
checkpoint 1,000 steps before its head: 1,000 checkpoints move), `undo`, `rewind REF
--hard --yes --no-backup` (the copy of the file aside is not what is measured), `undo`, and (the journal's checkout only; the old code has none) `redo`,
`undo`. Whole processes (spawn to exit), medians of the rounds; wall and CPU time.
Not part of the test suite: it needs the generated database and a quiet machine."""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(checkout: str, db: str, *args: str) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, stdout) of `agentctl --db DB ARGS` run from `checkout`."""
    env = dict(os.environ, PYTHONPATH=checkout)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "agentctl", "--db", db, *args],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: agentctl {' '.join(args)} failed: {proc.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def target(db: str) -> tuple[str, str]:
    """(format, REF): the long thread's checkpoint 1,000 steps before its head."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "writes" in tables:  # LangGraph: checkpoint ids grow with time
            rows = con.execute(
                "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'long-thread' AND "
                "checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1 OFFSET 1000"
            ).fetchall()
            return "langgraph", rows[0][0]
        rows = con.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'long-thread' "
            "ORDER BY step DESC LIMIT 1 OFFSET 1000"
        ).fetchall()
        return "agentos", rows[0][0]
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, help="the 1M database (copied per side, never written)")
    ap.add_argument("--before", required=True, help="a checkout of the code to compare with")
    ap.add_argument("--after", default=HERE, help="this checkout (default)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--workdir", default="/tmp")
    args = ap.parse_args()
    fmt, ref = target(args.db)
    sides = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    copies = {}
    for name in sides:
        copies[name] = os.path.join(args.workdir, f"journal_1m_{name}.db")
        shutil.copyfile(args.db, copies[name])
    steps = [
        ("rewind", ("rewind", ref, "--yes")),
        ("undo (rewind)", ("undo",)),
        ("rewind --hard", ("rewind", ref, "--hard", "--yes", "--no-backup")),
        ("undo (hard)", ("undo",)),
        ("redo (hard)", ("redo",)),
        ("undo (redo)", ("undo",)),
    ]
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    try:
        for _ in range(args.runs):
            for name, checkout in sides.items():
                for label, cmd in steps:
                    if label.startswith(("redo", "undo (redo)")) and name == "before":
                        continue  # the old op log has no redo
                    wall, cpu, _out = timed(checkout, copies[name], *cmd)
                    times.setdefault((label, name), []).append((wall, cpu))
    finally:
        for path in copies.values():
            for suffix in ("", "-journal", "-wal", "-shm"):
                if os.path.exists(path + suffix):
                    os.remove(path + suffix)
    print(f"{fmt}, 1M rows ({args.db}), REF {ref}, {args.runs} rounds; medians, wall (CPU) seconds")
    print("| step | before | after | after / before |")
    print("|---|---|---|---|")
    for label, _ in steps:
        med = {}
        for name in sides:
            got = times.get((label, name))
            if got:
                med[name] = (statistics.median(w for w, _ in got), statistics.median(c for _, c in got))
        cells = [f"{med[n][0]:.3f} s ({med[n][1]:.3f})" if n in med else "—" for n in sides]
        ratio = f"{med['after'][0] / med['before'][0]:.2f}×" if len(med) == 2 else "—"
        print(f"| `{label}` | {cells[0]} | {cells[1]} | {ratio} |")


if __name__ == "__main__":
    main()
