"""The compact footer: this mode's keys, then "1-6 modes", and always "? Help  q Quit" at the
right edge. At 80 columns the keys that do not fit are left out whole (never cut mid-word);
every key is still in help (?) and the palette (Ctrl+P). Key names come from the bindings with
the user's keymap applied, as a person reads them ('/', 'Esc', 'Space')."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget


class KeyBar(Widget):
    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; background: $panel; color: $text; padding: 0 1; }
    """
    ALWAYS = ("app.help", "app.quit")

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, lambda _s: self.refresh())
        self.watch(self.screen, "focused", lambda _f: self.refresh())

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def items(self) -> tuple[list[tuple[str, str, bool]], list[tuple[str, str, bool]], bool]:
        """(this screen's shown keys, the always-shown ones, whether mode keys are active)."""
        from minertui.keys import key_display

        app = self.app
        mine: dict[str, list] = {}
        always: dict[str, list] = {}
        modes = False
        active = self.screen.active_bindings
        screen_keys = {key: b for key, b in self.screen._bindings}
        for key, ab in active.items():
            b = ab.binding
            if not b.show and ab.node is not self.screen and key in screen_keys \
                    and screen_keys[key].show:
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
            entry = target.setdefault(bid, [[], b.description, ab.enabled])
            shown = key_display(app, key)
            if shown not in entry[0]:
                entry[0].append(shown)
        focused = self.screen.focused
        typing = focused is not None and focused.check_consume_key("a", "a")
        if typing:  # a field takes the letters: say how to hand them back to the mode
            mine = {"mode.leave_field": [["Esc"], "leave field", True], **mine}
        order = {bid: i for i, bid in enumerate(self.ALWAYS)}
        fixed = sorted(always.items(), key=lambda kv: order.get(kv[0], 9))
        return ([("/".join(k[:1]), d, e) for k, d, e in mine.values()],
                [("/".join(k[:1]), d, e) for _bid, (k, d, e) in fixed], modes)

    def render(self) -> Text:
        mine, always, modes = self.items()
        width = max(0, self.size.width - 2)

        def piece(key: str, desc: str, enabled: bool) -> Text:
            t = Text()
            t.append(key, style="bold" if enabled else "dim")
            t.append(f" {desc}", style="" if enabled else "dim")
            return t

        right = Text("  ").join(piece(*i) for i in always)
        left_items = [piece(*i) for i in mine]
        if modes:
            left_items.append(piece("1-6", "modes", True))
        left = Text()
        room = width - len(right.plain) - 2
        for p in left_items:
            need = len(p.plain) + (2 if left.plain else 0)
            if len(left.plain) + need > room:
                continue  # leave it out whole; it is in help and the palette
            if left.plain:
                left.append("  ")
            left.append_text(p)
        gap = max(1, width - len(left.plain) - len(right.plain))
        return Text.assemble(left, " " * gap, right, no_wrap=True, overflow="crop")
