"""Make the bundled sample of Agno's session store, sample_db/agno.db, written by the real
agno 3 (tests/scripts/agno_write.py: an agent with a tool and session state, a
regeneration and a `continue_run(fork=True)`, a team with a member, a workflow of two
steps, a PAUSED run; a scripted model, no network):

    pip install -e '.[test]' && python sample_db/make_agno_sample.py
    agentctl --db sample_db/agno.db log chat
    agentctl --db sample_db/agno.db show team@1
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    path = HERE / "agno.db"
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{path}{suffix}"):
            os.remove(f"{path}{suffix}")
    subprocess.run(
        [
            sys.executable,
            str(HERE.parent / "tests" / "scripts" / "agno_write.py"),
            "write",
            "sqlite",
            str(path),
        ],
        check=True,
        env=dict(os.environ, AGNO_TELEMETRY="false"),
    )
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=DELETE")  # the file alone holds it all
    conn.close()
    print(path)
