"""agentctl's terminal UI (Textual). Imported only by `agentctl tui` / `agentctl demo`."""

from __future__ import annotations


def run(db: str, *, readonly: bool = False, format: str | None = None) -> None:
    """Open the TUI on a database (a SQLite path or a Postgres DSN) until the user quits.

    Raises the database's AgentctlError (after the app has closed) when it cannot be opened.
    """
    from agentctl.tui.source import FirstPage

    if format in (None, "agentos"):
        FirstPage.start(db)  # the thread list's query runs while Textual is imported
    from agentctl.tui.app import run as run_app

    run_app(db, readonly=readonly, format=format)


__all__ = ["run"]
