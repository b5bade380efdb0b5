"""Every format's History declares what its writes return with the contract's types
(storage/results.py), not `Any` (issue 38 item 1): a method that overrides a contract
method (History, the capability Protocols, JournalHistory's writes) whose return type the
contract names says that type, so mypy checks the callers against it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import agentctl.storage as storage
from agentctl.storage import contract
from agentctl.storage.journal.history import JournalHistory


def _contract_classes() -> list[type]:
    protocols = [
        c for c in vars(contract).values() if isinstance(c, type) and getattr(c, "_is_protocol", False)
    ]
    return [contract.History, *protocols, JournalHistory]


def _untyped(cls: type) -> list[str]:
    out = []
    for name, fn in vars(cls).items():
        if name.startswith("_") or not inspect.isfunction(fn):
            continue
        for base in _contract_classes():
            declared = vars(base).get(name)
            if inspect.isfunction(declared):
                want = str(declared.__annotations__.get("return", ""))
                got = str(fn.__annotations__.get("return", ""))
                if want and "Any" not in want and (not got or "Any" in got):
                    out.append(
                        f"{cls.__module__}.{cls.__name__}.{name} -> {got or '?'} (the contract: {want})"
                    )
                break
    return out


def _histories() -> list[type]:
    found = []
    for mod in pkgutil.walk_packages(storage.__path__, "agentctl.storage."):
        if not mod.name.endswith(".history"):
            continue
        module = importlib.import_module(mod.name)
        found += [
            c
            for c in vars(module).values()
            if isinstance(c, type) and issubclass(c, contract.History) and c.__module__ == module.__name__
        ]
    return found


def test_every_formats_writes_return_the_contracts_types() -> None:
    histories = _histories()
    names = {c.__module__.split(".")[2] for c in histories}
    assert {"agentos", "article", "langgraph", "openai_agents", "adk", "agno", "crewai"} <= names, names
    assert [line for c in histories for line in _untyped(c)] == []


def test_the_check_sees_a_write_typed_any() -> None:
    class Loose(contract.History):  # (never instantiated: its annotations are what is read)
        async def delete_thread(self, thread_id: str) -> Any:  # type: ignore[override]  # noqa: F821
            raise NotImplementedError

    assert _untyped(Loose) == [f"{__name__}.Loose.delete_thread -> Any (the contract: OpResult)"]
