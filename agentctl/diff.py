"""Structural diffs of JSON values and checkpoints, as JSON Pointers and JSON Patches.

This module is pure: no I/O, standard library only (``orjson`` is used when it is
installed, purely as a speed-up), and it never imports Rich, Textual or a driver.

Values are JSON values as ``json``/``orjson`` load them: ``dict`` (string keys),
``list``, ``str``, ``int``, ``float``, ``bool`` and ``None``.

Equality is *JSON equality* (:func:`json_equal`): ``1 == 1.0``, but ``True != 1``
and ``False != 0``; object key order does not matter.

What the functions guarantee
----------------------------
* ``diff_values(a, a) == []``, and for JSON values ``a`` and ``b``,
  ``apply_patch(a, to_json_patch(diff_values(a, b)))`` is JSON-equal to ``b``.
* Every :class:`Change` has a ``path`` that is an RFC 6901 JSON Pointer relative to
  its section value (``""`` is the whole value; ``~`` and ``/`` in keys are escaped
  as ``~0`` and ``~1``). Changes are listed depth-first: an object's keys in the
  order of ``a``, then keys new in ``b``; a list's common prefix index by index,
  then its trailing elements one by one (``/N``), in increasing index order.
* Nothing recurses on the Python stack: nesting depth is limited by memory only.
* Inputs are never mutated. Results (``Change.old``/``new``, patch values, the
  document :func:`apply_patch` returns) share unchanged subtrees with the inputs;
  copy them before mutating them in place.
* Diffing two large documents that share most subtrees costs roughly one C-level
  comparison/serialisation pass over them plus Python work proportional to the
  parts that differ.
"""

from __future__ import annotations

import json
import marshal
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from agentctl.text import json_type_name

_orjson: ModuleType | None
try:  # optional: settles "equal subtree" checks when key order differs
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None

__all__ = [
    "CHECKPOINT_SECTIONS",
    "METADATA_FIELDS",
    "MISSING",
    "OPS",
    "Change",
    "PatchError",
    "apply_patch",
    "checkpoint_sections",
    "diff_checkpoints",
    "diff_values",
    "escape_token",
    "format_path",
    "join_pointer",
    "json_equal",
    "parse_pointer",
    "patch_by_section",
    "quick_equal",
    "resolve_pointer",
    "summarize",
    "to_json_patch",
    "unescape_token",
]


# --------------------------------------------------------------------------- sentinel


class _Missing:
    """Type of :data:`MISSING`; there is exactly one instance."""

    __slots__ = ()
    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<missing>"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        # Pickling and copy.deepcopy give back the singleton.
        return "MISSING"


MISSING: Any = _Missing()
"""Stands for an absent object key or list index (never a JSON value itself)."""

OPS = ("added", "removed", "changed")

#: The sections of a checkpoint, in the order :func:`diff_checkpoints` reports them.
CHECKPOINT_SECTIONS = ("metadata", "messages", "state", "tools_result")

#: Metadata attributes diffed in the "metadata" section (plus ``next_node``).
METADATA_FIELDS = (
    "thread_id",
    "checkpoint_id",
    "parent_checkpoint_id",
    "step",
    "created_at",
    "tags",
    "summary",
)


class PatchError(ValueError):
    """A JSON Pointer or JSON Patch is malformed or does not fit the document."""


@dataclass(frozen=True)
class Change:
    """One difference between two values.

    ``op`` is ``"added"`` (``old`` is :data:`MISSING`), ``"removed"`` (``new`` is
    :data:`MISSING`) or ``"changed"``. ``path`` is a JSON Pointer relative to the
    section value. Note that ``==`` on changes compares ``old``/``new`` with Python
    equality (``True == 1``); use :func:`json_equal` on the values when it matters.
    """

    section: str
    path: str
    op: str
    old: Any
    new: Any

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown change op {self.op!r}; expected one of {OPS}")

    def to_dict(self) -> dict[str, Any]:
        """``{"section", "path", "op", "old", "new"}``; MISSING is rendered as None."""
        return {
            "section": self.section,
            "path": self.path,
            "op": self.op,
            "old": None if self.old is MISSING else self.old,
            "new": None if self.new is MISSING else self.new,
        }


# --------------------------------------------------------------------------- equality


def _same_encoding(a: Any, b: Any) -> bool:
    """True if ``a`` and ``b`` (already equal under ``==``) have the same encoding.

    For values that are equal under ``==``, equal encodings imply JSON equality,
    since every encoding used spells ``True`` and ``1`` differently. ``marshal``
    (format 2: no back-references, which would depend on reference counts) is
    tried first because it is the fastest; it is sensitive to key order and string
    interning, so orjson's sorted-key JSON gets a second chance when installed.
    False only means "not shown equal": ``1`` vs ``1.0``, ``-0.0`` vs ``0.0``,
    too deep, or not encodable.
    """
    try:
        if marshal.dumps(a, 2) == marshal.dumps(b, 2):
            return True
    except (ValueError, RecursionError):  # too deep, or a non-builtin type
        pass
    if _orjson is not None:
        opt = _orjson.OPT_SORT_KEYS
        try:
            return _orjson.dumps(a, option=opt) == _orjson.dumps(b, option=opt)
        except (TypeError, ValueError, RecursionError):  # e.g. ints beyond 64 bits
            pass
    return False


def quick_equal(a: Any, b: Any) -> bool | None:
    """Decide JSON equality cheaply, at C speed: True, False, or None (undecided).

    None means the C-level checks could not settle it: the values are nested too
    deeply for them, or they are equal to Python but encode differently (``1`` vs
    ``1.0``, a ``True`` somewhere facing a ``1``, or, without orjson, a different
    key order). :func:`json_equal` settles those cases with a Python-level walk.
    """
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    try:
        if a != b:
            return False
    except RecursionError:
        return None
    if not isinstance(a, (dict, list)):
        return True
    return True if _same_encoding(a, b) else None


def _strict_equal(a: Any, b: Any) -> bool:
    """JSON equality by an explicit-stack walk (no recursion limit)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        tx, ty = type(x), type(y)
        if tx is bool or ty is bool:
            if tx is not ty or x != y:
                return False
        elif isinstance(x, dict):
            if not isinstance(y, dict) or len(x) != len(y):
                return False
            for key, value in x.items():
                if key not in y:
                    return False
                stack.append((value, y[key]))
        elif isinstance(x, list):
            if not isinstance(y, list) or len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(y, (dict, list)) or x != y:
            return False
    return True


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0``, ``True != 1``, key order ignored.

    Fast for large equal values (one C comparison plus one serialisation) and
    safe for arbitrarily deep ones. :data:`MISSING` equals only itself.
    """
    verdict = quick_equal(a, b)
    return _strict_equal(a, b) if verdict is None else verdict


# --------------------------------------------------------------------------- pointers

_INDEX_RE = re.compile(r"0|[1-9][0-9]*")
_BAD_ESCAPE_RE = re.compile(r"~(?![01])")


def escape_token(key: Any) -> str:
    """Escape one object key (or list index) as a JSON Pointer reference token."""
    text = key if isinstance(key, str) else str(key)
    return text.replace("~", "~0").replace("/", "~1")


def unescape_token(token: str) -> str:
    """Undo :func:`escape_token`; raises :class:`PatchError` on a bad ``~`` escape."""
    if "~" not in token:
        return token
    if _BAD_ESCAPE_RE.search(token):
        raise PatchError(f"invalid escape in JSON Pointer token {token!r} (use ~0 or ~1)")
    return token.replace("~1", "/").replace("~0", "~")


def parse_pointer(pointer: str) -> list[str]:
    """Split a JSON Pointer into unescaped reference tokens (``""`` -> ``[]``)."""
    if not isinstance(pointer, str):
        raise PatchError(f"JSON Pointer must be a string, not {json_type_name(pointer)}")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"JSON Pointer {pointer!r} must be empty or start with '/'")
    return [unescape_token(token) for token in pointer[1:].split("/")]


def join_pointer(tokens: Iterable[Any]) -> str:
    """Build a JSON Pointer from unescaped tokens (keys or indexes)."""
    return "".join("/" + escape_token(token) for token in tokens)


def format_path(pointer: str) -> str:
    """Human-readable form of a pointer: ``/a/0/b c`` -> ``a[0]["b c"]``.

    ``""`` is ``(root)``; identifier keys are written plainly, joined by dots;
    canonical array indexes as ``[N]`` (a pointer cannot tell them from numeric
    object keys); every other key as a JSON string in brackets.
    """
    tokens = parse_pointer(pointer)
    if not tokens:
        return "(root)"
    parts: list[str] = []
    for token in tokens:
        if _INDEX_RE.fullmatch(token):
            parts.append(f"[{token}]")
        elif token.isidentifier():
            parts.append(f".{token}" if parts else token)
        else:
            parts.append(f"[{json.dumps(token, ensure_ascii=False)}]")
    return "".join(parts)


def _list_index(token: str, length: int, *, for_add: bool, pointer: str) -> int:
    if for_add and token == "-":
        return length
    if not _INDEX_RE.fullmatch(token):
        raise PatchError(f"{pointer!r}: {token!r} is not a valid array index")
    index = int(token)
    limit = length if for_add else length - 1
    if index > limit:
        raise PatchError(f"{pointer!r}: index {index} is out of range (array length {length})")
    return index


def _child(node: Any, token: str, pointer: str) -> Any:
    if isinstance(node, dict):
        if token not in node:
            raise PatchError(f"{pointer!r}: key {token!r} not found")
        return node[token]
    if isinstance(node, list):
        return node[_list_index(token, len(node), for_add=False, pointer=pointer)]
    raise PatchError(f"{pointer!r}: cannot index into a JSON {json_type_name(node)} with {token!r}")


_RAISE: Any = object()


def resolve_pointer(doc: Any, pointer: str, default: Any = _RAISE) -> Any:
    """The value at ``pointer`` in ``doc``.

    If the location does not exist, returns ``default`` when given, else raises
    :class:`PatchError`. (A malformed pointer always raises.)
    """
    node = doc
    for token in parse_pointer(pointer):
        try:
            node = _child(node, token, pointer)
        except PatchError:
            if default is _RAISE:
                raise
            return default
    return node


# --------------------------------------------------------------------------- diff


def _settled_equal(keys: Iterable[Any], x: Any, y: Any) -> set[Any]:
    """The keys (or indexes) whose children in ``x`` and ``y`` are JSON-equal.

    Children equal under ``==`` are encoded as one batch, so a big container with
    few differences costs one C-level pass rather than one call per child. If the
    batch does not settle (some ``True`` faces a ``1``, say), nothing is settled
    here and every child is examined on its own, which is always correct.
    """
    same = []
    for key in keys:
        xv, yv = x[key], y[key]
        try:
            if xv is yv or xv == yv:
                same.append(key)
        except RecursionError:  # too deep for C comparison: examine it on its own
            pass
    if same and _same_encoding([x[k] for k in same], [y[k] for k in same]):
        return set(same)
    return set()


def _children(path: str, x: Any, y: Any) -> Iterator[tuple[str, Any, Any]]:
    """Pairs (pointer, old, new) of the differing-or-unsettled children of two
    dicts or two lists, in diff order; absent sides are MISSING."""
    if isinstance(x, dict):
        settled = _settled_equal([key for key in x if key in y], x, y)
        for key, value in x.items():
            if key not in settled:
                yield f"{path}/{escape_token(key)}", value, y.get(key, MISSING)
        for key, value in y.items():
            if key not in x:
                yield f"{path}/{escape_token(key)}", MISSING, value
    else:
        common = min(len(x), len(y))
        settled = _settled_equal(range(common), x, y)
        for i in range(common):
            if i not in settled:
                yield f"{path}/{i}", x[i], y[i]
        for i in range(common, len(x)):
            yield f"{path}/{i}", x[i], MISSING
        for i in range(common, len(y)):
            yield f"{path}/{i}", MISSING, y[i]


def diff_values(a: Any, b: Any, section: str = "") -> list[Change]:
    """Structural diff of two JSON values (see the module docstring for order).

    Objects are compared key by key and lists index by index; anything else
    (scalars, type changes such as dict -> list or ``True`` -> ``1``) is one
    ``"changed"`` at its path. Either side may be :data:`MISSING`, which gives one
    ``"added"``/``"removed"`` change at the root.
    """
    changes: list[Change] = []
    stack: list[Iterator[tuple[str, Any, Any]]] = [iter((("", a, b),))]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        path, x, y = item
        if x is y:
            continue
        if x is MISSING:
            changes.append(Change(section, path, "added", MISSING, y))
        elif y is MISSING:
            changes.append(Change(section, path, "removed", x, MISSING))
        elif (isinstance(x, dict) and isinstance(y, dict)) or (isinstance(x, list) and isinstance(y, list)):
            # Skip equal subtrees at C speed; when undecided, walking is always right.
            if quick_equal(x, y) is not True:
                stack.append(_children(path, x, y))
        elif not json_equal(x, y):
            changes.append(Change(section, path, "changed", x, y))
    return changes


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def checkpoint_sections(checkpoint: Any) -> dict[str, Any]:
    """The four diffable sections of a checkpoint, by name (see CHECKPOINT_SECTIONS).

    Accepts any object with ``metadata``, ``messages``, ``state``, ``tools_result``
    and ``next_node`` attributes (``agentctl.model.Checkpoint``), or the mapping
    its ``to_dict()`` returns. "metadata" is a dict of METADATA_FIELDS plus
    ``next_node``; absent attributes read as None.
    """
    meta = _get(checkpoint, "metadata")
    metadata = {name: _get(meta, name) for name in METADATA_FIELDS}
    metadata["next_node"] = _get(checkpoint, "next_node")
    return {
        "metadata": metadata,
        "messages": _get(checkpoint, "messages"),
        "state": _get(checkpoint, "state"),
        "tools_result": _get(checkpoint, "tools_result"),
    }


#: the keys a format adds to a checkpoint's state of its own (LangGraph: the checkpoint's
#: whole metadata, its internal channels), left out of `show`'s and `diff`'s state and
#: the TUI's unless asked (`--all-keys`)
FORMAT_KEYS = ("__metadata__", "__internal__")


def own_state(state: Any) -> Any:
    """A state without FORMAT_KEYS (itself when it holds none)."""
    if not isinstance(state, dict) or not any(k in state for k in FORMAT_KEYS):
        return state
    return {k: v for k, v in state.items() if k not in FORMAT_KEYS}


def diff_checkpoints(a: Any, b: Any, *, format_keys: bool = True) -> list[Change]:
    """Diff two checkpoints section by section: metadata, messages, state, tools_result
    (without `format_keys`: the state's FORMAT_KEYS left out)."""
    sections_a, sections_b = checkpoint_sections(a), checkpoint_sections(b)
    if not format_keys:
        for sections in (sections_a, sections_b):
            sections["state"] = own_state(sections["state"])
    changes: list[Change] = []
    for section in CHECKPOINT_SECTIONS:
        changes.extend(diff_values(sections_a[section], sections_b[section], section))
    return changes


def summarize(changes: Iterable[Change], *, sections: Iterable[str] = ()) -> dict[str, dict[str, int]]:
    """Counts per section and op: ``{section: {"added", "removed", "changed", "total"}}``.

    Sections appear in the order of ``sections`` (listed even with no change),
    then in order of first appearance; every op key is present.
    """
    counts: dict[str, dict[str, int]] = {}

    def bucket(section: str) -> dict[str, int]:
        if section not in counts:
            counts[section] = {"added": 0, "removed": 0, "changed": 0, "total": 0}
        return counts[section]

    for section in sections:
        bucket(section)
    for change in changes:
        entry = bucket(change.section)
        entry[change.op] += 1
        entry["total"] += 1
    return counts


# --------------------------------------------------------------------------- patches


def _split_parent(pointer: str) -> tuple[str, str]:
    parent, _, last = pointer.rpartition("/")
    return parent, last


def to_json_patch(changes: Iterable[Change]) -> list[dict[str, Any]]:
    """RFC 6902 operations for the changes of ONE section, in an order that applies.

    "added" -> ``add``, "removed" -> ``remove``, "changed" -> ``replace``; paths
    are the changes' pointers. Changes keep their order, except that removals of
    list elements sharing a parent are emitted together, highest index first, at
    the position of the first of them (so earlier removals do not shift later
    ones). Values are the changes' ``new`` objects (not copied). Raises ValueError
    if the changes span several sections or carry an unknown op.
    """
    changes = list(changes)
    if len({change.section for change in changes}) > 1:
        raise ValueError("to_json_patch takes the changes of one section; use patch_by_section")

    removals_by_parent: dict[str, list[Change]] = {}
    for change in changes:
        if change.op == "removed" and change.path:
            parent, last = _split_parent(change.path)
            if _INDEX_RE.fullmatch(last):
                removals_by_parent.setdefault(parent, []).append(change)

    patch: list[dict[str, Any]] = []
    emitted_parents: set[str] = set()
    for change in changes:
        if change.op == "added":
            patch.append({"op": "add", "path": change.path, "value": change.new})
        elif change.op == "changed":
            patch.append({"op": "replace", "path": change.path, "value": change.new})
        elif change.op == "removed":
            parent, last = _split_parent(change.path)
            group = removals_by_parent.get(parent) if change.path else None
            if group is None or not _INDEX_RE.fullmatch(last):
                patch.append({"op": "remove", "path": change.path})
            elif parent not in emitted_parents:
                emitted_parents.add(parent)
                for removal in sorted(group, key=lambda c: int(_split_parent(c.path)[1]), reverse=True):
                    patch.append({"op": "remove", "path": removal.path})
        else:  # pragma: no cover - Change validates op
            raise ValueError(f"unknown change op {change.op!r}")
    return patch


def patch_by_section(changes: Iterable[Change]) -> dict[str, list[dict[str, Any]]]:
    """``{section: to_json_patch(changes of that section)}``, sections in first-seen order."""
    grouped: dict[str, list[Change]] = {}
    for change in changes:
        grouped.setdefault(change.section, []).append(change)
    return {section: to_json_patch(group) for section, group in grouped.items()}


def _deepcopy_json(value: Any) -> Any:
    """Copy the dicts and lists of a JSON value without recursion (leaves are shared)."""
    if not isinstance(value, (dict, list)):
        return value
    root = dict(value) if isinstance(value, dict) else list(value)
    stack = [root]
    while stack:
        node = stack.pop()
        keys = node.keys() if isinstance(node, dict) else range(len(node))
        for key in keys:
            child = node[key]
            if isinstance(child, (dict, list)):
                copied = dict(child) if isinstance(child, dict) else list(child)
                node[key] = copied
                stack.append(copied)
    return root


class _PatchTarget:
    """A document being patched copy-on-write: containers are shallow-copied the
    first time an operation has to change them, so the input is never mutated."""

    def __init__(self, doc: Any) -> None:
        self.root = doc
        # Keep the copies alive so their ids cannot be reused by foreign objects.
        self._owned: list[Any] = []
        self._owned_ids: set[int] = set()

    def _own(self, container: Any) -> Any:
        if id(container) in self._owned_ids:
            return container
        copied = dict(container) if isinstance(container, dict) else list(container)
        self._owned.append(copied)
        self._owned_ids.add(id(copied))
        return copied

    def get(self, pointer: str) -> Any:
        return resolve_pointer(self.root, pointer)

    def _writable_parent(self, pointer: str, tokens: list[str]) -> Any:
        """The (owned) container holding the last token of ``tokens``."""
        if not isinstance(self.root, (dict, list)):
            raise PatchError(
                f"{pointer!r}: the document root is a JSON {json_type_name(self.root)}, not an object or array"
            )
        self.root = node = self._own(self.root)
        for token in tokens[:-1]:
            child = _child(node, token, pointer)
            if not isinstance(child, (dict, list)):
                raise PatchError(
                    f"{pointer!r}: {token!r} holds a JSON {json_type_name(child)}, not an object or array"
                )
            owned = self._own(child)
            if owned is not child:
                key = token if isinstance(node, dict) else int(token)
                node[key] = owned
            node = owned
        return node

    def _target(self, pointer: str) -> tuple[Any, str] | None:
        """(writable parent, last token) of a pointer; None for the document root."""
        tokens = parse_pointer(pointer)
        if not tokens:
            return None
        return self._writable_parent(pointer, tokens), tokens[-1]

    def _existing_index(self, parent: Any, last: str, pointer: str) -> Any:
        """The key or index of an existing member (PatchError when there is none)."""
        if isinstance(parent, dict):
            if last not in parent:
                raise PatchError(f"{pointer!r}: key {last!r} not found")
            return last
        return _list_index(last, len(parent), for_add=False, pointer=pointer)

    def add(self, pointer: str, value: Any) -> None:
        target = self._target(pointer)
        if target is None:
            self.root = value
            return
        parent, last = target
        if isinstance(parent, dict):
            parent[last] = value
        else:
            parent.insert(_list_index(last, len(parent), for_add=True, pointer=pointer), value)

    def remove(self, pointer: str) -> Any:
        target = self._target(pointer)
        if target is None:
            raise PatchError("cannot remove the document root")
        parent, last = target
        return parent.pop(self._existing_index(parent, last, pointer))

    def replace(self, pointer: str, value: Any) -> None:
        target = self._target(pointer)
        if target is None:
            self.root = value
            return
        parent, last = target
        parent[self._existing_index(parent, last, pointer)] = value


_NEEDS_VALUE = ("add", "replace", "test")
_NEEDS_FROM = ("move", "copy")


def apply_patch(doc: Any, patch: Iterable[Mapping[str, Any]]) -> Any:
    """Apply RFC 6902 operations (add, remove, replace, move, copy, test) to ``doc``.

    Returns the new document; ``doc`` and the patch values are not mutated (the
    result shares untouched subtrees with them). Raises :class:`PatchError` naming
    the failing operation on a malformed operation, a path that does not exist,
    an index out of range, or a failed ``test``.
    """
    target = _PatchTarget(doc)
    for number, operation in enumerate(patch):
        if not isinstance(operation, Mapping):
            raise PatchError(f"patch operation {number} is a JSON {json_type_name(operation)}, not an object")
        op, path = operation.get("op"), operation.get("path")
        try:
            if not isinstance(path, str):
                raise PatchError("missing or non-string 'path'")
            if op in _NEEDS_VALUE and "value" not in operation:
                raise PatchError("missing 'value'")
            if op in _NEEDS_FROM and not isinstance(operation.get("from"), str):
                raise PatchError("missing or non-string 'from'")
            if op == "add":
                target.add(path, operation["value"])
            elif op == "remove":
                target.remove(path)
            elif op == "replace":
                target.replace(path, operation["value"])
            elif op == "move":
                source = operation["from"]
                if path != source:
                    if path.startswith(source + "/"):
                        raise PatchError(f"cannot move {source!r} into its own child {path!r}")
                    target.add(path, target.remove(source))
            elif op == "copy":
                target.add(path, _deepcopy_json(target.get(operation["from"])))
            elif op == "test":
                if not json_equal(target.get(path), operation["value"]):
                    raise PatchError(f"test failed: value at {path!r} differs")
            else:
                raise PatchError(f"unknown op {op!r}")
        except PatchError as exc:
            raise PatchError(f"patch operation {number} ({op} {path!r}): {exc}") from None
    return target.root
