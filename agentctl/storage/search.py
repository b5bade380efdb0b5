"""The search helpers every format's store shares: where a text is in a checkpoint's
messages, tool results and state (`search_messages`, `search_json`), the hit's path as
`diff` writes paths (`hit_path`, `message_hit_path`, `json_hit_tokens`), its one-line
snippet (`snippet_around`), and the part of a text an SQL prefilter may test
(`token_part`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentctl.model import CheckpointMetadata, SearchHit


def dumps(value: Any) -> str:
    """Serialise as the original writer does (`ensure_ascii=False`)."""
    return json.dumps(value, ensure_ascii=False)


def snippet_around(text: str, needle: str, width: int = 60) -> str:
    """A one-line excerpt of `text` around the first case-insensitive match of `needle`
    (up to `width` characters on each side of it)."""
    flat = " ".join(text.split())
    pos = flat.lower().find(needle.lower())
    if pos < 0:
        return flat[: width * 2] + ("…" if len(flat) > width * 2 else "")
    start = max(0, pos - width)
    if start and flat[start - 1] != " ":  # begin at a word, not inside one
        space = flat.find(" ", start, pos)
        start = space + 1 if space >= 0 else start
    end = min(len(flat), pos + len(needle) + width)
    if end < len(flat) and flat[end] != " ":  # and end after one
        space = flat.rfind(" ", pos + len(needle), end)
        end = space if space >= 0 else end
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


_KEY_HIT = object()


def json_hit_tokens(value: Any, needle: str) -> list[Any] | None:
    """Where `needle` (lower case) first occurs in a JSON value, in document order: the
    tokens (keys, indexes) of the first leaf whose text, or of the value under the
    first key whose name, contains it; [] when only the serialised whole does (a match
    across a key and its value), None when not even that. Iterative (deep values)."""
    stack: list[tuple[Any, list[Any]]] = [(value, [])]
    while stack:
        v, tokens = stack.pop()
        if isinstance(v, dict):
            children = []
            for k, x in v.items():
                if needle in str(k).lower():
                    children.append((_KEY_HIT, tokens + [k]))  # a key: the path of its value
                    break
                children.append((x, tokens + [k]))
            stack.extend(reversed(children))
        elif isinstance(v, list):
            stack.extend(reversed([(x, tokens + [i]) for i, x in enumerate(v)]))
        elif v is _KEY_HIT:
            return tokens
        else:
            text = v if isinstance(v, str) else dumps(v)
            if needle in text.lower():
                return tokens
    return [] if needle in dumps(value).lower() else None


def hit_path(place: str, tokens: Sequence[Any]) -> str:
    """A hit's path as `diff` writes paths: state.trip.city, messages[3].content."""
    from agentctl.diff import format_path, join_pointer

    return format_path(join_pointer([place, *tokens]))


def message_hit_path(step: int) -> str:
    """The path of a session store's hit in its step's own item (step N shows N
    messages, the N-th its own): messages[N-1].content."""
    return hit_path("messages", [step - 1, "content"])


def search_json(meta: CheckpointMetadata, where: str, value: Any, text: str) -> SearchHit | None:
    """The hit of `text` in the tool results or the state of a checkpoint, or None: the
    snippet from the whole value, the path to the first leaf (or key) that has it."""
    if not isinstance(value, dict) or not value:
        return None
    needle = text.lower()
    tokens = json_hit_tokens(value, needle)
    if tokens is None:
        return None
    return SearchHit(
        meta.thread_id,
        meta.checkpoint_id,
        meta.step,
        where,
        None,
        snippet_around(_leaf_text(value, tokens, needle), text),
        hit_path(where, tokens),
    )


def _leaf_text(value: Any, tokens: Sequence[Any], needle: str) -> str:
    """The text of the value at `tokens` when it holds `needle` (the snippet: the match
    in its own leaf, as a message's), else the whole value's (a match in a key's name,
    or across a key and its value)."""
    leaf = value
    for t in tokens:
        leaf = leaf[t]
    text = leaf if isinstance(leaf, str) else dumps(leaf)
    return text if tokens and needle in text.lower() else dumps(value)


def search_messages(
    cp_meta: CheckpointMetadata,
    messages: Any,
    tools: Any,
    text: str,
    role: str | None,
    state: Any = None,
    places: Any = ("messages", "tools", "state"),
) -> list[SearchHit]:
    """Find `text` (case-insensitive) in a checkpoint's messages, tool results and
    state (of `places`; with a `role`, in the messages only)."""
    hits: list[SearchHit] = []
    needle = text.lower()
    if isinstance(messages, list) and "messages" in places:
        # The newest matching message is the hit's own (the earlier ones are history
        # the checkpoint carries, and hits of the earlier checkpoints).
        for i in range(len(messages) - 1, -1, -1):
            msg = messages[i]
            if not isinstance(msg, dict):
                continue
            msg_role = msg.get("role")
            if role is not None and msg_role != role:
                continue
            content = msg.get("content", "")
            body = content if isinstance(content, str) else dumps(content)
            if needle in body.lower():
                hits.append(
                    SearchHit(
                        cp_meta.thread_id,
                        cp_meta.checkpoint_id,
                        cp_meta.step,
                        "messages",
                        msg_role if isinstance(msg_role, str) else None,
                        snippet_around(body, text),
                        hit_path("messages", [i, "content"]),
                    )
                )
                break
    if role is None and "tools" in places:
        hit = search_json(cp_meta, "tools_result", tools, text)
        if hit is not None:
            hits.append(hit)
    if role is None and "state" in places:
        hit = search_json(cp_meta, "state", state, text)
        if hit is not None:
            hits.append(hit)
    return hits


# What a text's part for the SQL test leaves out: JSON's structure (a hit in the JSON text
# of a value may span it, and writers space it differently), what JSON escapes, and
# non-ASCII letters with case (SQLite's LIKE folds ASCII case only). The SQL searches'
# prefilter (SQLite LIKE, Postgres ILIKE) tests this part: it never drops a hit.
_NOT_IN_PART = frozenset('"\\/,:[]{}')


def token_part(text: str) -> str:
    """The longest run of `text` that any match of it holds inside one JSON string,
    key or number of the stored text, in the same characters: no JSON structure or
    escaped character, no non-ASCII character that has case, no space at its ends (a
    space after a comma or colon is structure)."""
    best = run = ""
    for ch in text + '"':  # the closing quote ends the last run
        if ch in _NOT_IN_PART or ch < " " or (ch > "\x7f" and (ch.lower() != ch or ch.upper() != ch)):
            if len(run.strip(" ")) > len(best):
                best = run.strip(" ")
            run = ""
        else:
            run += ch
    return best
