"""agentctl's terminal UI (Textual). Imported only by `agentctl tui` / `agentctl demo`."""

from __future__ import annotations

from agentctl.tui.startup import resume_gc, start_up


def run(db: str, *, readonly: bool = False, format: str | None = None, **agent: str | None) -> None:
    """Open the TUI on a database (a SQLite path or a Postgres DSN) until the user quits.

    `agent`: agent, config, python: the user's agent that `R` runs (AgentctlApp's).
    Raises the database's AgentctlError (after the app has closed) when it cannot be opened.
    """
    start_up(db, format=format)
    try:
        from agentctl.tui.app import run as run_app

        run_app(db, readonly=readonly, format=format, **agent)
    finally:
        resume_gc()


__all__ = ["run", "start_up", "resume_gc"]
