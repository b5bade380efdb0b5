"""Which backend a database is on (SQLite or Postgres) is the storage layer's to know:
no module outside agentctl/storage compares a backend kind; the CLI and the TUI ask the
store (`Store.local_file`) or the storage package (`agentctl.storage.local_file(url)`).

The child scripts (runners/*_child.py, runners/childlib.py) are not part of agentctl's
process: they run in the user's interpreter with the framework alone and cannot import
the storage layer, so they open the framework's own saver by the kind they are sent."""

from __future__ import annotations

import ast

from tests.support.rig import REPO

PKG = REPO / "agentctl"
KINDS = {"sqlite", "postgres", "postgresql"}


def _child_script(rel: str) -> bool:
    return rel.startswith("runners/") and (rel.endswith("_child.py") or rel == "runners/childlib.py")


def kind_comparisons(source: str) -> list[int]:
    """The lines of the comparisons (==, !=, in, not in) with a backend kind's name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        for side in [node.left, *node.comparators]:
            items = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
            if any(isinstance(i, ast.Constant) and i.value in KINDS for i in items):
                found.append(node.lineno)
                break
    return found


def test_no_module_outside_storage_compares_a_backend_kind():
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith("storage/") or _child_script(rel):
            continue
        bad.extend(f"{rel}:{line}" for line in kind_comparisons(path.read_text()))
    assert not bad, "backend kinds compared outside agentctl/storage:\n" + "\n".join(bad)


def test_the_check_sees_comparisons():
    """Not vacuous: it finds each way of writing one, and the storage layer has them."""
    source = (
        'a = kind == "sqlite"\nb = "postgres" != kind\nc = kind in ("sqlite", "x")\n'
        'd = kind not in {"postgresql"}\ne = kind == "warning"\n'
    )
    assert kind_comparisons(source) == [1, 2, 3, 4]
    assert kind_comparisons((PKG / "storage" / "contract.py").read_text())
