"""Whether an error already says that nothing was changed is its type's (or its maker's)
word, `AgentctlError.nothing_changed`, not a guess from its text: a write refused or
rolled back says "nothing was changed" once."""

from __future__ import annotations

import pytest

from agentctl.cli.writes import say_rolled_back
from agentctl.errors import DatabaseBusy, GaveWay, MergeConflictError, OperationError


@pytest.mark.parametrize(
    "exc",
    [
        GaveWay("db"),
        MergeConflictError([]),
        DatabaseBusy("db: busy; nothing was changed", nothing_changed=True),
        OperationError("t changed; nothing was deleted", nothing_changed=True),
    ],
)
def test_an_error_that_says_it_is_not_said_again(exc: Exception) -> None:
    before = str(exc)
    say_rolled_back(exc, "prune")
    assert str(exc) == before


@pytest.mark.parametrize(
    "exc", [OperationError("disk full"), OperationError("nothing was found to compare (a row's own text)")]
)
def test_an_error_that_does_not_gets_it_once(exc: Exception) -> None:
    say_rolled_back(exc, "prune")
    assert str(exc).endswith("(the prune was rolled back, nothing was changed)")
    assert exc.nothing_changed
    say_rolled_back(exc, "prune")  # once
    assert str(exc).count("nothing was changed") == 1
