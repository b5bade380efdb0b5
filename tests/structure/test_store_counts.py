"""ARCHITECTURE.md's new-store checklist says how many methods a new store must write:
the numbers it states are the code's (the abstract methods of `Store` and `History`,
what `JournalHistory` and `RewindAndBranchOnly` give of them)."""

from __future__ import annotations

import re

from agentctl.storage.contract import History, RewindAndBranchOnly, Store
from agentctl.storage.journal.history import JournalHistory
from tests.support.rig import REPO

TEXT = " ".join((REPO / "ARCHITECTURE.md").read_text().split())


def stated(pattern: str) -> int:
    found = re.findall(pattern, TEXT)
    assert len(found) == 1, f"ARCHITECTURE.md should say {pattern!r} once: {found}"
    return int(found[0])


def counts() -> dict[str, int]:
    history = History.__abstractmethods__
    journal = {m for m in history if m in vars(JournalHistory)}
    refused = {m for m in history - journal if m in vars(RewindAndBranchOnly)}
    return {
        "store": len(Store.__abstractmethods__),
        "history": len(history),
        "journal": len(journal),
        "on_journal": len(history - journal),
        "refused": len(refused),
        "rewind_only": len(history - journal - refused),
    }


def test_the_checklist_states_the_codes_counts():
    assert {
        "store": stated(r"`Store` has (\d+) abstract methods"),
        "history": stated(r"`History` has (\d+) abstract methods"),
        "journal": stated(r"`JournalHistory` gives (\d+) of them"),
        "on_journal": stated(r"a store on the journal writes (\d+)"),
        "rewind_only": stated(r"and (\d+) with `RewindAndBranchOnly`"),
        "refused": stated(r"which refuses merge, prune and delete: (\d+)\)"),
    } == counts()


def test_the_store_names_its_abstract_methods():
    """The checklist lists Store's abstract methods by name, every one of them."""
    listed = re.search(r"`Store` has \d+ abstract methods \(([^)]*)\)", TEXT)
    assert listed is not None
    assert set(re.findall(r"`(\w+)`", listed.group(1))) == set(Store.__abstractmethods__)


def test_a_new_abstract_method_changes_the_count():
    """The count follows the code (it is not vacuous): one more abstract method, one more."""

    class More(Store):
        async def extra(self) -> None: ...

        extra.__isabstractmethod__ = True  # type: ignore[attr-defined]

    assert len(More.__abstractmethods__) == counts()["store"] + 1


def test_what_a_format_must_implement_states_the_contracts_lists():
    """The paragraph after "How a write flows" counts contract.py's lists: the reads every
    Store gives, those with defaults, the capability calls, the writes every History
    gives, and names the capability Protocols."""
    from agentctl.storage import contract

    assert {
        "REQUIRED_READS": stated(r"a Store, the (\d+) `REQUIRED_READS`"),
        "OPTIONAL_READS": stated(r"(\d+) `OPTIONAL_READS` have defaults"),
        "CAPABILITY_CALLS": stated(r"and (\d+) `CAPABILITY_CALLS` refuse"),
        "REQUIRED_WRITES": stated(r"A History, the (\d+) `REQUIRED_WRITES`"),
    } == {
        name: len(getattr(contract, name))
        for name in ("REQUIRED_READS", "OPTIONAL_READS", "CAPABILITY_CALLS", "REQUIRED_WRITES")
    }
    protocols = re.search(r"implements as small Protocols \(([^)]*)\)", TEXT)
    assert protocols is not None
    assert set(re.findall(r"`(\w+)`", protocols.group(1))) == {
        p.__name__ for p in contract.CAPABILITY_PROTOCOLS.values()
    }
    assert set(contract.REQUIRED_READS) == set(contract.Store.__abstractmethods__)
    assert set(contract.REQUIRED_WRITES) == set(contract.History.__abstractmethods__)
