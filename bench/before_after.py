"""`threads list`, `show` and `log` on the 1M AgentOS and LangGraph SQLite databases,
by two checkouts of agentctl, interleaved run by run (before, after, before, ...), so
that both see the same load: the median seconds of each and their ratio.

    python bench/before_after.py BEFORE_CHECKOUT AFTER_CHECKOUT AGENTOS.db LANGGRAPH.db --runs 7

Each database's ids come from its `.meta.json` (make_db.py) or the `--meta` file given
to make_langgraph_db.py (DB.meta.json). Whole processes (`python -m agentctl`), output
to /dev/null; one warm-up run of each first. The medians of wall time and of CPU time
(user + system: less moved by other jobs on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def _run(checkout: str, argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run."""
    env = {**os.environ, "PYTHONPATH": checkout}
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "agentctl", *argv],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd="/tmp",
    )
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("agentos_db")
    ap.add_argument("langgraph_db")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    cases = []
    for name, db in (("AgentOS", args.agentos_db), ("LangGraph", args.langgraph_db)):
        meta = json.load(open(db + ".meta.json"))
        db = os.path.abspath(db)
        cases += [
            (f"{name} `threads list`", ["--db", db, "threads", "list"]),
            (f"{name} `show`", ["--db", db, "show", meta["sample_checkpoint"]]),
            (f"{name} `log`", ["--db", db, "log", meta["long_thread"]]),
        ]
    print(
        "| command | before: wall / CPU (s) | after: wall / CPU (s) | after / before (wall, CPU) |\n"
        "|---|---|---|---|"
    )
    for label, argv in cases:
        _run(args.before, argv), _run(args.after, argv)  # warm-up: the file in the page cache
        runs: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
        for _ in range(args.runs):
            runs["before"].append(_run(args.before, argv))
            runs["after"].append(_run(args.after, argv))
        (bw, bc), (aw, ac) = [
            (statistics.median(r[0] for r in runs[k]), statistics.median(r[1] for r in runs[k]))
            for k in ("before", "after")
        ]
        print(
            f"| {label} | {bw:.3f} / {bc:.3f} | {aw:.3f} / {ac:.3f} | {aw / bw:.2f}×, {ac / bc:.2f}× |",
            flush=True,
        )


if __name__ == "__main__":
    main()
