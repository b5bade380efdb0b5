"""The TUI's messages: fields given when they are made, and follow mode's changes that
merge while they wait in a queue."""

from __future__ import annotations

from agentctl.tui.messages import DatabaseChanged, OperationFinished, ThreadPageLoaded, ThreadsLoaded


def test_database_changed_repeats_merge_into_the_newest():
    thread_only = DatabaseChanged(thread_changed=True, threads_changed=False)
    threads_only = DatabaseChanged(thread_changed=False, threads_changed=True)
    # Textual asks the queued message whether the next one replaces it; the next one
    # then says everything both said changed.
    assert thread_only.can_replace(threads_only)
    assert threads_only.thread_changed and threads_only.threads_changed
    quiet = DatabaseChanged(thread_changed=False, threads_changed=False)
    assert quiet.can_replace(DatabaseChanged(False, False))
    # another kind of message is never replaced by it (nor replaces it)
    assert not quiet.can_replace(OperationFinished("undo", "done"))


def test_reload_messages_carry_their_fields():
    loaded = ThreadsLoaded("", 0, [], False, keep="t-1")
    assert loaded.keep == "t-1" and ThreadsLoaded("", 0, [], False).keep is None
    page = ThreadPageLoaded("t-1", [], 0, 0, keep_selection=True)
    assert page.keep_selection and not ThreadPageLoaded("t-1", [], 0, 0).keep_selection
