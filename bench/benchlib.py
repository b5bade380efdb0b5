"""What the formats' small bench scripts share (agno_bench.py, sdk_bench.py): their
options and the timing of a command. Standard library only; run as `python
bench/X.py`, the scripts find this module beside them."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def options() -> argparse.Namespace:
    """--runs N (default 5), --seed N (the data's, default 1), --remake (the data again)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--remake", action="store_true")
    return ap.parse_args()


def timed(cmd: list[str], runs: int) -> tuple[float, float, float, float]:
    """Wall seconds: median, min, max; and the median CPU seconds (user + system) of the
    process, which a loaded machine inflates less than the wall time. agentctl is this
    checkout's (PYTHONPATH)."""
    import resource

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        times.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times), min(times), max(times), statistics.median(cpu)
