"""A package's names loaded from their modules on first use (PEP 562 `__getattr__`), so
that importing the package imports nothing more: the public facades `agentctl`,
`agentctl.backends` and `agentctl.engine` are tables of names and this loader."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def loader(
    package: str, exports: Mapping[str, str], renamed: Mapping[str, str] | None = None
) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: `exports` maps a name to the module it is loaded
    from (`renamed`: its name there, when different); a loaded name is kept in the package."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), (renamed or {}).get(name, name))
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
