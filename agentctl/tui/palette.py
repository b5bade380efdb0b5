"""The command palette's agentctl commands (ctrl+p), made from the key bindings: each
binding's description is a command's title, its tooltip what the command does. A key
added to the main screen is in the palette (and in the help screen) with nothing else
to write."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider


def binding_help(binding: Binding) -> str:
    """What a key does, in a sentence (its tooltip), else its description."""
    return binding.tooltip or binding.description


class BindingCommands(Provider):
    """The actions of the screen the palette was opened on (the main screen's keys; quit
    is one of Textual's own commands)."""

    def _commands(self) -> Iterator[tuple[str, str, Callable[[], Any]]]:
        main = self.screen
        for binding in main.BINDINGS:
            if not isinstance(binding, Binding) or binding.action == "quit":
                continue  # a built-in command
            yield binding.description, binding_help(binding), partial(main.run_action, binding.action)

    async def discover(self) -> Hits:
        for title, help, command in self._commands():
            yield DiscoveryHit(title, command, help=help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help, command in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), command, text=title, help=help)
