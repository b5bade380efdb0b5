"""The storage contract's lists and declared capabilities: what a Store and a History must
give (their abstract methods) is what the contract's lists say; each format declares
EDIT, RUN, REDO and COMPARE exactly when its classes implement the capability's Protocol;
a capability not declared is refused by the code that uses it, naming the format."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from agentctl.storage import formats, open_store
from agentctl.storage.contract import (
    CAPABILITY_CALLS,
    CAPABILITY_PROTOCOLS,
    OPTIONAL_READS,
    REQUIRED_READS,
    REQUIRED_WRITES,
    RETRIED_WRITES,
    Capability,
    History,
    Store,
    Unsupported,
    _entry_point,
    implements,
)

#: Store's own members that are no reads (its life and its declarations)
_LIFECYCLE = {"connect", "close", "can", "require", "history"}


def _public_methods(cls: type) -> set[str]:
    return {n for n, v in vars(cls).items() if not n.startswith("_") and inspect.isfunction(v)}


def test_the_lists_say_what_a_store_and_a_history_must_give() -> None:
    assert set(REQUIRED_READS) == Store.__abstractmethods__
    assert (
        set(OPTIONAL_READS) | set(CAPABILITY_CALLS)
        == _public_methods(Store) - Store.__abstractmethods__ - _LIFECYCLE
    )
    assert not set(OPTIONAL_READS) & set(CAPABILITY_CALLS)
    assert set(REQUIRED_WRITES) == History.__abstractmethods__


@pytest.mark.parametrize("spec", [f for f in formats() if f.history], ids=lambda f: f.name)
def test_a_format_declares_what_its_history_implements(spec) -> None:
    history = _entry_point(spec.history)
    for cap in (Capability.EDIT, Capability.RUN, Capability.REDO):
        assert implements(history, cap) == (cap in spec.capabilities), (spec.name, cap.value)
    if Capability.COMPARE in spec.capabilities:  # Store's reads (defaults for every format)
        assert implements(Store, Capability.COMPARE)
    assert set(CAPABILITY_PROTOCOLS) == {Capability.EDIT, Capability.RUN, Capability.REDO, Capability.COMPARE}


def test_history_refusing_redo_does_not_implement_it() -> None:
    class NoRedo(History):  # (abstract: only its class is asked)
        pass

    assert not implements(NoRedo, Capability.REDO)


async def test_edit_not_declared_is_refused(sample_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled sample (AgentOS) with EDIT taken out of its declaration: `plan_edit`
    refuses (exit 2) naming the format, though its History has `edit_state`."""
    from agentctl.edits import plan_edit

    async with open_store(str(sample_copy), readonly=False) as store:
        spec = store.format
        monkeypatch.setattr(
            type(store),
            "format",
            dataclasses.replace(spec, capabilities=spec.capabilities - {Capability.EDIT}),
        )
        thread = (await store.thread_summaries(1))[0].thread_id
        head = (await store.read_thread(thread, 1, 0, descending=True))[0]
        with pytest.raises(Unsupported, match="^the agentos format does not support edit$"):
            await plan_edit(store, store.history(), head, [])


def test_journal_hooks_a_format_must_give_are_abstract() -> None:
    from agentctl.storage.journal.history import JournalHistory

    assert JournalHistory.__abstractmethods__ == {"fingerprint"}

    class NoPrint(JournalHistory):
        pass

    with pytest.raises(TypeError, match="fingerprint"):
        NoPrint()  # type: ignore[abstract]


@pytest.mark.parametrize("spec", [f for f in formats() if f.history], ids=lambda f: f.name)
def test_every_write_that_may_give_way_is_retried(spec) -> None:
    """Each of RETRIED_WRITES a History has wears `retried_write` (declared where it is
    defined: in the format's class or the journal's); RewindAndBranchOnly's refusals write nothing."""
    from agentctl.storage.contract import RewindAndBranchOnly

    history = _entry_point(spec.history)
    have = [
        name
        for name in RETRIED_WRITES
        if getattr(history, name, None) not in (None, getattr(RewindAndBranchOnly, name, None))
    ]
    assert {"rewind", "branch", "undo"} <= set(have)
    assert [n for n in have if not getattr(getattr(history, n), "retried_write", False)] == []
