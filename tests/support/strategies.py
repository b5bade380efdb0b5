"""Hypothesis strategies for JSON values: one copy for the diff, merge and fuzz tests.

Each test file picks its sizes (`json_values(..., width=, max_leaves=)`); the shapes,
the scalars and the keys likely to collide are defined here once.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# Keys likely to collide between two values, and ones that need escaping in a JSON pointer.
COLLIDING_KEYS = ["a", "b", "", "~", "/", "~1", "a/b", "m~n", "0", "b c", "中文", "ключ"]


def keys(samples: list[str] = COLLIDING_KEYS, *, text_size: int = 4) -> st.SearchStrategy[str]:
    """One of `samples` or any short text."""
    return st.one_of(st.sampled_from(samples), st.text(max_size=text_size))


def scalars(*, text_size: int = 6) -> st.SearchStrategy[Any]:
    """JSON scalars: null, booleans, integers of any size, finite floats, short text."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=text_size),
    )


def json_values(
    leaves: st.SearchStrategy[Any], keys: st.SearchStrategy[str], *, width: int, max_leaves: int
) -> st.SearchStrategy[Any]:
    """Nested lists and objects (at most `width` items each) over `leaves`."""
    return st.recursive(
        leaves,
        lambda children: st.lists(children, max_size=width) | st.dictionaries(keys, children, max_size=width),
        max_leaves=max_leaves,
    )


KEYS = keys()
SCALARS = scalars()
JSON = json_values(SCALARS, KEYS, width=5, max_leaves=25)
