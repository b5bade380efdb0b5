"""The key bar: Textual's Footer, rebuilt only when the keys it shows change, and on a
terminal too narrow for one line of keys, laid out on as many lines as they need."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Footer

# The columns Textual's Footer gives a key besides its key and description: a space
# between them and the padding (one line), or the margin (compact, on several lines).
_KEY_EXTRA = 3
_KEY_EXTRA_COMPACT = 2
_PALETTE_WIDTH = 14  # "▏^p palette" and its padding, docked on the right


class KeyFooter(Footer):
    """Textual's Footer rebuilds all its keys (a dozen widgets here: mounted, styled,
    laid out) after every focus change, although the app's keys stay the same; this one
    skips a rebuild that would show the same keys, and shows them from the first frame.

    Textual's Footer is one line: keys past its width are cut off (at 80 columns, the
    last three). When they do not fit, this one is compact and a grid of as many lines
    as the keys need, so that every key is shown."""

    DEFAULT_CSS = """
    KeyFooter.-wrap {
        layout: grid;
        height: auto;
        grid-columns: auto;
        grid-rows: 1;
        grid-gutter: 0 1;
        /* a grid's auto column is as wide as its keys without their margin: the space
           between keys is the gutter, or each key would lose its last letter */
        FooterKey {
            margin: 0;
        }
    }
    """

    _shown: tuple[Any, ...] | None = None

    def _keys(self) -> tuple[Any, ...]:
        """What compose() shows, as a comparable value."""
        palette = self.app.COMMAND_PALETTE_BINDING
        return (
            self.compact,
            self.show_command_palette,
            tuple(
                (binding, self.app.get_key_display(binding), enabled, tooltip)
                for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
                if binding.show or key == palette
            ),
        )

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            # Textual's Footer starts empty and shows its keys in a later frame, after
            # the first change of bindings, and only while the app has focus (a browser
            # page under `agentctl serve` may not have it: the footer stayed empty).
            # Here they are in the first frame (the app's keys; a change of bindings
            # rebuilds it if the keys shown differ).
            self.set_reactive(Footer._bindings_ready, True)
        self._fit(self.app.size.width)
        self._shown = self._keys() if self._bindings_ready else None
        yield from super().compose()

    async def recompose(self) -> None:
        if self._shown is not None and self._bindings_ready and self._keys() == self._shown:
            return
        await super().recompose()

    def on_resize(self, event: events.Resize) -> None:
        if self._fit(self.app.size.width):
            self.refresh(layout=True)
        # Textual's notifications (its toast rack, docked at the bottom) sit one line
        # up: over the footer's second line and on when it takes several. They go
        # above all of it, so the keys stay visible.
        for rack in self.screen.query("#textual-toastrack"):
            rack.styles.margin = (0, 0, max(event.size.height, 1), 0)

    def _fit(self, width: int) -> bool:
        """One line when every key fits in `width`, else compact on a grid of enough
        lines; whether that changed."""
        shown = [
            (self.app.get_key_display(binding), binding.description)
            for (_node, binding, _enabled, _tip) in self.screen.active_bindings.values()
            if binding.show
        ]
        palette = _PALETTE_WIDTH if self.show_command_palette else 0
        one_line = sum(len(k) + len(d) + _KEY_EXTRA for k, d in shown) + palette
        wrap = bool(shown) and one_line > width
        columns = 0
        if wrap:
            item = max(len(k) + len(d) + _KEY_EXTRA_COMPACT for k, d in shown)
            columns = max(1, (width - palette) // item)
        before = (self.has_class("-wrap"), self.styles.grid_size_columns if wrap else 0)
        self.set_class(wrap, "-wrap")
        self.set_reactive(Footer.compact, wrap)
        self.set_class(wrap, "-compact")
        if wrap:
            self.styles.grid_size_columns = columns
        return before != (wrap, columns if wrap else 0)


class KeyLine(Widget):
    """The keys as one line of text, where the footer goes, for the first frame: a
    dozen FooterKey widgets cost about as much to mount and lay out as the rest of that
    frame. The main screen replaces it with the KeyFooter right after that frame."""

    COMPONENT_CLASSES = {"footer-key--key", "footer-key--description"}
    DEFAULT_CSS = """
    KeyLine {
        dock: bottom;
        height: 1;
        background: $footer-background;
        .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .footer-key--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
    }
    """

    def __init__(self, bindings: Iterable[object], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._shown_keys = [b for b in bindings if isinstance(b, Binding) and b.show]

    def render(self) -> Text:
        key_style = self.get_component_rich_style("footer-key--key")
        description_style = self.get_component_rich_style("footer-key--description")
        text = Text(no_wrap=True, overflow="crop")
        for binding in self._shown_keys:
            text.append(f" {self.app.get_key_display(binding)} ", key_style)
            text.append(f"{binding.description} ", description_style)
        return text
