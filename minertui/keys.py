"""Keys as a person reads them ('/', 'Esc', 'Space') and a node's bindings with the user's keymap
applied: what the help screen and the key bar show. Pure Textual; imports nothing of the app."""

from __future__ import annotations

from textual.binding import Binding, BindingsMap


def key_display(app, key: str) -> str:
    """A key as a person reads it: '/', 'Esc', '?', 'F1', '^p', 'Space'."""
    shown = app.get_key_display(Binding(key, ""))
    return shown.upper() if shown[:1] == "f" and shown[1:].isdigit() else shown  # Textual says 'f1'


def keys_of(app, node_or_cls, binding_id: str | None = None) -> list[tuple[Binding, str]]:
    """[(binding, keys shown)] of a node's or class's bindings, the keymap applied; one entry per
    binding id (its keys joined)."""
    bmap = BindingsMap(node_or_cls.BINDINGS)
    keymap = getattr(app, "_keymap", {}) or {}
    if keymap:
        bmap.apply_keymap(keymap)
    grouped: dict[str, tuple[Binding, list[str]]] = {}
    for key, b in bmap:
        ident = b.id or f"{b.action}:{b.description}"
        if binding_id is not None and ident != binding_id:
            continue
        entry = grouped.setdefault(ident, (b, []))
        shown = key_display(app, key)
        if shown not in entry[1]:
            entry[1].append(shown)
    return [(b, "/".join(ks)) for b, ks in grouped.values()]
