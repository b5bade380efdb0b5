"""The stores stand side by side on the shared layer (issue 34), read from the import
graph (every import, function-level and `if TYPE_CHECKING:` ones included):

- no format package imports another format's package (LangGraph's store is not built
  on AgentOS's, nor any SDK's on another's);
- only AgentOS's own faces import storage/agentos: `agentctl.engine`, `agentctl.backends`
  (and the package root's drop-in names, which load it by string);
- the registry and the shared modules (storage/__init__.py, sqlconn.py, schema.py,
  plugins.py, sql/, search.py, journal/, ...: every storage module outside a format's
  package) import no format: they reach one through its FormatSpec's "module:name"
  entry points only.
"""

from __future__ import annotations

from agentctl.storage.plugins import BUILTIN
from tests.structure.test_layers import import_graph

FORMATS = tuple(sorted(entry.partition(":")[0] for entry in BUILTIN))
AGENTOS = "agentctl.storage.agentos"
AGENTOS_FACES = ("agentctl.engine", "agentctl.backends")


def _under(module: str, packages: tuple[str, ...]) -> str | None:
    return next((p for p in packages if module == p or module.startswith(p + ".")), None)


def violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import of `graph` ({module: the modules it imports}) that breaks the rules."""
    bad = []
    for module, targets in sorted(graph.items()):
        own = _under(module, FORMATS)
        for target in sorted(targets):
            fmt = _under(target, FORMATS)
            if fmt is None or fmt == own:
                continue
            if own is not None:
                bad.append(f"{module} -> {target}: a format imports another format's package")
            elif module.startswith("agentctl.storage"):
                bad.append(f"{module} -> {target}: a shared storage module imports a format")
            elif fmt == AGENTOS and not _under(module, AGENTOS_FACES):
                bad.append(f"{module} -> {target}: only AgentOS's faces import storage/agentos")
    return bad


def test_the_formats_and_the_shared_layer_import_as_the_rules_say():
    bad = violations(import_graph())
    assert not bad, "\n".join(bad)


def test_the_formats_are_the_registered_ones():
    assert AGENTOS in FORMATS and "agentctl.storage.langgraph" in FORMATS and len(FORMATS) >= 5


def test_the_check_sees_each_kind_of_violation():
    """Planted violations are each found (the check is not vacuous); the allowed edges
    (a format's own modules, AgentOS's faces, shared modules from a format) are not."""
    graph = import_graph()
    planted = {
        "agentctl.storage.langgraph.store": {"agentctl.storage.agentos.sqlite"},
        "agentctl.storage.sqlconn": {"agentctl.storage.openai_agents.store"},
        "agentctl.storage": {"agentctl.storage.agentos"},
        "agentctl.runs": {"agentctl.storage.agentos.rows"},
    }
    for module, targets in planted.items():
        found = violations({**graph, module: graph.get(module, set()) | targets})
        assert len(found) == 1 and found[0].startswith(module + " -> "), (module, found)
    allowed = {
        "agentctl.backends": {"agentctl.storage.agentos.sqlite"},
        "agentctl.storage.adk.store": {"agentctl.storage.adk", "agentctl.storage.sql.sqlite"},
    }
    assert violations({**graph, **allowed}) == []
