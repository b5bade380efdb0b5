"""The TUI's start-up: the collector paused until the main screen is whole, the thread
list's first page read while Textual is imported (agentctl.tui re-exports these; the
main screen imports this module, never the package, so nothing it imports leads back
to the app)."""

from __future__ import annotations

_gc_paused = False


def start_up(db: str, *, format: str | None = None) -> None:
    """What `agentctl tui` does before it imports Textual: the thread list's first page
    of a SQLite file starts being read on a plain thread (`FirstPage`), and the cyclic
    garbage collector is paused until the main screen is whole (`resume_gc`).

    Starting the app makes no cyclic garbage worth collecting (modules, widgets, styles,
    the first frame's strips: all alive), but the collector would walk those objects again
    and again while they appear: about a fifth of the main thread's time to the first
    frame with the threads (the CLI does the same for its own start-up:
    agentctl.cli.startup)."""
    global _gc_paused
    import gc

    if gc.isenabled():
        gc.disable()
        _gc_paused = True
    if format in (None, "agentos"):
        from agentctl.tui.source import FirstPage

        FirstPage.start(db)  # the thread list's query runs while Textual is imported


def resume_gc() -> None:
    """Once the start-up is over (the main screen calls it when it is whole; `run` when
    the app ends): its objects go to the collector's permanent generation (they live as
    long as the app), and collection resumes, if `start_up` paused it."""
    global _gc_paused
    if _gc_paused:
        import gc

        _gc_paused = False
        gc.freeze()
        gc.enable()
