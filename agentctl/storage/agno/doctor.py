"""`doctor` and `stats` of an Agno database: what the store's reads find odd (runs whose
legacy copy differs from the table's, `run_index` gaps and duplicates) and its usage
figures."""

from __future__ import annotations

import time
from typing import Any, Protocol

from agentctl.storage.agno.runs import Run, top_level
from agentctl.storage.contract import Problem

#: the fields of a run compared between its legacy copy and the table's
COMPARED = ("status", "content", "messages", "session_state")


class Reader(Protocol):
    """What these checks need of the store (agno/store.py's AgnoStore)."""

    _S: str
    _R: str

    @property
    def has_table(self) -> bool: ...

    @property
    def has_legacy(self) -> bool: ...

    async def _q(self, sql: str, *params: Any) -> list[dict[str, Any]]: ...

    async def _order(self, sid: str, legacy: Any = None) -> list[Run]: ...

    async def _fill(self, runs: Any) -> None: ...


async def problems(store: Reader, limit: int = 100) -> list[Problem]:
    out: list[Problem] = []
    if store.has_table and store.has_legacy:
        differ = 0
        for r in await store._q(
            f"SELECT session_id, runs FROM {store._S} WHERE runs IS NOT NULL ORDER BY session_id"
        ):
            order = await store._order(r["session_id"], r["runs"])
            both = [x for x in order if x.source == "both"]
            await store._fill(both)
            for x in both:
                legacy = x.extra.get("legacy") or {}
                fields = [k for k in COMPARED if (x.data or {}).get(k) != legacy.get(k)]
                if fields and differ < limit:
                    differ += 1
                    subject = f"{r['session_id']}/{x.run_id}"
                    # a warning: agno itself leaves the copy behind when it updates a run
                    # (a PAUSED run continued); `--json` lists a warning's detail alone
                    out.append(
                        Problem(
                            "warning",
                            "legacy_differs",
                            subject,
                            f"{subject}: the run's copy in the legacy runs array differs from the "
                            f"runs table's in {', '.join(fields)} (Agno reads the table's)",
                            "legacy-differs",
                        )
                    )
    if store.has_table:
        found = 0
        rows = await store._q(
            f"SELECT session_id, COUNT(*) AS n, COUNT(DISTINCT run_index) AS d, COUNT(run_index) AS k, "
            f"MIN(run_index) AS lo, MAX(run_index) AS hi FROM {store._R} GROUP BY session_id "
            "ORDER BY session_id"
        )
        for r in rows:
            n, d, k = int(r["n"]), int(r["d"]), int(r["k"])
            what = []
            if k < n:
                what.append(f"{n - k} run(s) without a run_index")
            if d < k:
                what.append(f"{k - d} duplicate run_index value(s)")
            if k and (r["lo"] != 0 or int(r["hi"]) - int(r["lo"]) + 1 != d):
                what.append(f"run_index runs {r['lo']}..{r['hi']} over {d} value(s) (gaps)")
            if what and found < limit:
                found += 1
                out.append(
                    Problem(
                        "error",
                        "run_index",
                        str(r["session_id"]),
                        "; ".join(what) + " (Agno orders runs by run_index, then created_at)",
                        "run-index",
                    )
                )
    return out


async def stats(store: Reader, user: str | None, days: float | None) -> dict[str, Any]:
    """Sessions by type and user, runs by status (top-level and member runs)."""
    conds: list[str] = []
    params: list[Any] = []
    if user is not None:
        conds.append("user_id = ?")
        params.append(user)
    if days is not None:
        conds.append("updated_at > ?")
        params.append(int(time.time() - days * 86400))
    where = (" WHERE " + " AND ".join(conds)) if conds else ""
    sessions = await store._q(
        f"SELECT session_id, session_type, user_id FROM {store._S}{where} ORDER BY session_id", *params
    )
    per_type: dict[str, int] = {}
    per_user: dict[str, dict[str, Any]] = {}
    per_status: dict[str, int] = {}
    runs = member_runs = 0
    for s in sessions:
        per_type[s["session_type"] or ""] = per_type.get(s["session_type"] or "", 0) + 1
        order = await store._order(s["session_id"])
        tops = top_level(order)
        runs += len(tops)
        member_runs += len(order) - len(tops)
        u = per_user.setdefault(s["user_id"] or "", {"user_id": s["user_id"] or "", "sessions": 0, "runs": 0})
        u["sessions"] += 1
        u["runs"] += len(tops)
        for r in tops:
            status = (r.status or (r.data or {}).get("status") or "").upper()
            per_status[status] = per_status.get(status, 0) + 1
    return {
        "sessions": len(sessions),
        "runs": runs,
        "member_runs": member_runs,
        "per_type": [{"session_type": k, "sessions": v} for k, v in sorted(per_type.items())],
        "per_user": sorted(per_user.values(), key=lambda u: u["user_id"]),
        "per_status": [{"status": k, "runs": v} for k, v in sorted(per_status.items())],
    }
