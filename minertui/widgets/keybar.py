"""The compact footer: this mode's keys, then "1-6 modes", and always "? Help  q Quit" at the
right edge. At 80 columns the keys that do not fit are left out whole (never cut mid-word);
every key is still in help (?) and the palette (Ctrl+P). Key names come from the bindings with
the user's keymap applied, as a person reads them ('/', 'Esc', 'Space'). A click on a key (its
label or its name) runs its action, as Textual's Footer does; a greyed-out key only beeps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import events
from textual.widget import Widget

from minertui.keys import key_display


@dataclass(frozen=True)
class Item:
    """One key of the bar: what it shows and what a click on it runs (`action` in `node`)."""

    key: str
    description: str
    enabled: bool
    action: str = ""
    node: Any = None


class KeyBar(Widget):
    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; background: $panel; color: $text; padding: 0 1; }
    """
    ALWAYS = ("app.help", "app.quit")

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self._spans: list[tuple[int, int, Item]] = []  # (first cell, end, item) of the last render

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, lambda _s: self.refresh())
        self.watch(self.screen, "focused", self._focus_moved)

    def _focus_moved(self, _focused: object) -> None:
        self.refresh()

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def items(self) -> tuple[list[Item], list[Item], bool]:
        """(this screen's shown keys, the always-shown ones, whether mode keys are active)."""
        app = self.app
        mine: dict[str, list] = {}
        always: dict[str, list] = {}
        modes = False
        active = self.screen.active_bindings
        screen_keys = {key: b for key, b in self.screen._bindings}
        for key, ab in active.items():
            b = ab.binding
            if not b.show and ab.node is not self.screen and key in screen_keys and screen_keys[key].show:
                # a widget's hidden binding (the table's Enter) shadows the mode's (Open): the
                # key still reaches the mode's action, so show the mode's name for it
                b = screen_keys[key]
            bid = b.id or b.action
            if bid.startswith("mode.") and bid != "mode.leave_field":
                modes = True
                continue
            if bid in self.ALWAYS:
                target = always
            elif b.show and b.description:
                target = mine
            else:
                continue
            node = self.screen if b is not ab.binding else ab.node
            entry = target.setdefault(bid, [[], b.description, ab.enabled, b.action, node])
            shown = key_display(app, key)
            if shown not in entry[0]:
                entry[0].append(shown)
        focused = self.screen.focused
        typing = focused is not None and focused.check_consume_key("a", "a")
        if typing:  # a field takes the letters: say how to hand them back to the mode
            mine = {"mode.leave_field": [["Esc"], "leave field", True, "leave_field", self.screen], **mine}
        order = {bid: i for i, bid in enumerate(self.ALWAYS)}
        fixed = sorted(always.items(), key=lambda kv: order.get(kv[0], 9))
        return (
            [Item(k[0], d, e, a, n) for k, d, e, a, n in mine.values()],
            [Item(k[0], d, e, a, n) for _bid, (k, d, e, a, n) in fixed],
            modes,
        )

    def render(self) -> Text:
        mine, always, modes = self.items()
        width = max(0, self.size.width - 2)

        def piece(i: Item) -> Text:
            t = Text()
            t.append(i.key, style="bold" if i.enabled else "dim")
            t.append(f" {i.description}", style="" if i.enabled else "dim")
            return t

        right = Text("  ").join(piece(i) for i in always)
        left_items = list(mine)
        if modes:
            left_items.append(Item("1-6", "modes", True))
        left = Text()
        spans: list[tuple[int, int, Item]] = []
        room = width - len(right.plain) - 2
        for i in left_items:
            p = piece(i)
            need = len(p.plain) + (2 if left.plain else 0)
            if len(left.plain) + need > room:
                continue  # leave it out whole; it is in help and the palette
            if left.plain:
                left.append("  ")
            spans.append((len(left.plain), len(left.plain) + len(p.plain), i))
            left.append_text(p)
        gap = max(1, width - len(left.plain) - len(right.plain))
        at = len(left.plain) + gap
        for i in always:
            n = len(piece(i).plain)
            spans.append((at, at + n, i))
            at += n + 2
        self._spans = spans
        return Text.assemble(left, " " * gap, right, no_wrap=True, overflow="crop")

    def item_at(self, x: int) -> Item | None:
        """The key drawn at content column `x` (as last rendered), if any."""
        return next((i for lo, hi, i in self._spans if lo <= x < hi), None)

    async def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        item = self.item_at(offset.x) if offset is not None else None
        if item is None or not item.action:
            return
        event.stop()
        if not item.enabled:
            self.app.bell()
            return
        await self.app.run_action(item.action, item.node)
