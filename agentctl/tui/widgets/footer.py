"""The key bar: Textual's Footer, rebuilt only when the keys it shows change."""

from __future__ import annotations

from typing import Any

from textual.widgets import Footer


class KeyFooter(Footer):
    """Textual's Footer rebuilds all its keys (a dozen widgets here: mounted, styled,
    laid out) after every focus change, although the app's keys stay the same; this one
    skips a rebuild that would show the same keys."""

    _shown: tuple[Any, ...] | None = None

    def _keys(self) -> tuple[Any, ...]:
        """What compose() shows, as a comparable value."""
        palette = self.app.COMMAND_PALETTE_BINDING
        return (self.compact, self.show_command_palette, tuple(
            (binding, self.app.get_key_display(binding), enabled, tooltip)
            for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
            if binding.show or key == palette))

    def compose(self):  # type: ignore[no-untyped-def]
        self._shown = self._keys() if self._bindings_ready else None
        yield from super().compose()

    async def recompose(self) -> None:
        if self._shown is not None and self._bindings_ready and self._keys() == self._shown:
            return
        await super().recompose()
