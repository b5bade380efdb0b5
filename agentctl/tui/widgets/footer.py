"""The key bar: Textual's Footer, rebuilt only when the keys it shows change."""

from __future__ import annotations

from typing import Any

from textual.widgets import Footer


class KeyFooter(Footer):
    """Textual's Footer rebuilds all its keys (a dozen widgets here: mounted, styled,
    laid out) after every focus change, although the app's keys stay the same; this one
    skips a rebuild that would show the same keys, and shows them from the first frame."""

    _shown: tuple[Any, ...] | None = None

    def _keys(self) -> tuple[Any, ...]:
        """What compose() shows, as a comparable value."""
        palette = self.app.COMMAND_PALETTE_BINDING
        return (self.compact, self.show_command_palette, tuple(
            (binding, self.app.get_key_display(binding), enabled, tooltip)
            for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
            if binding.show or key == palette))

    def compose(self):  # type: ignore[no-untyped-def]
        if not self._bindings_ready and self.app.app_focus:
            # Textual's Footer starts empty and shows its keys in a later frame, after
            # the first change of bindings: here they are in the first frame (the app's
            # keys; a change of bindings rebuilds it if the keys shown differ).
            self.set_reactive(Footer._bindings_ready, True)
        self._shown = self._keys() if self._bindings_ready else None
        yield from super().compose()

    async def recompose(self) -> None:
        if self._shown is not None and self._bindings_ready and self._keys() == self._shown:
            return
        await super().recompose()
