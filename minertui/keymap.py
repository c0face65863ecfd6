"""Keys: the user's keymap (settings "keymap": {binding id: "key[,key]"}), the key names as a
person reads them (help and footer), and the command palette's list of every action of every
mode. Defaults are plain letters and digits, F1 and Ctrl+P: nothing a tmux (prefix Ctrl+B) or
screen (Ctrl+A) user loses."""

from __future__ import annotations

import importlib
from typing import Any
from collections.abc import Iterator

from textual.binding import Binding, BindingsMap

# the mode screens by module (what MinerApp.MODES loads), in key order
MODE_MODULES = ("runs", "train", "ledger", "traces", "analysis", "submit")


def screen_class(mode: str):
    return getattr(importlib.import_module(f"minertui.screens.{mode}"), f"{mode.capitalize()}Screen")


def all_bindings() -> dict[str, Binding]:
    """Every binding with an id (the keymap's names), app's and every mode's."""
    from minertui.app import MinerApp
    from minertui.screens.common import ModeScreen

    out: dict[str, Binding] = {}
    for cls in (MinerApp, ModeScreen, *(screen_class(m) for m in MODE_MODULES)):
        for b in cls.BINDINGS:
            if isinstance(b, Binding) and b.id:
                out.setdefault(b.id, b)
    return out


def load_keymap(settings: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """(keymap to give `App.set_keymap`, one error line per entry that is not usable)."""
    raw = settings.get("keymap")
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        return {}, ['settings "keymap" must map binding ids to keys, e.g. {"runs.new": "N"}']
    known = all_bindings()
    keymap, errors = {}, []
    for bid, keys in raw.items():
        if bid not in known:
            errors.append(f'keymap: unknown binding id {bid!r} (see the ids in help, ?)')
        elif not isinstance(keys, str) or not keys.strip():
            errors.append(f"keymap: {bid} must be a key name like \"N\" or \"ctrl+n\"")
        else:
            keymap[bid] = keys.strip()
    return keymap, errors


def key_display(app, key: str) -> str:
    """A key as a person reads it: '/', 'Esc', '?', 'F1', '^p', 'Space'."""
    return app.get_key_display(Binding(key, ""))


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


def palette_commands(app, screen) -> Iterator:
    """SystemCommands for every mode switch and every described action of every mode."""
    from textual.app import SystemCommand

    from minertui.app import MODE_KEYS

    for key, mode, label in MODE_KEYS:
        yield SystemCommand(f"Mode: {label}", f"Switch to the {label} mode (key {key})",
                            lambda m=mode: app.action_mode(m))
    yield SystemCommand("Help", "Keys and what each mode shows (key ?)", app.action_help)
    for mode, label in ((m, lbl) for _k, m, lbl in MODE_KEYS):
        cls = screen_class(mode)
        for b, keys in keys_of(app, cls):
            if not b.description or b.action.startswith("app."):
                continue
            yield SystemCommand(f"{label}: {b.description}", f"key {keys} in the {label} mode (id {b.id})",
                                lambda m=mode, a=b.action: run_in_mode(app, m, a))


def run_in_mode(app, mode: str, action: str) -> None:
    """Switch to `mode` (unless there) and run `action` on its screen once it is shown."""
    from minertui.screens.common import ModeScreen

    scr = app.screen
    if isinstance(scr, ModeScreen) and scr.MODE.lower() == mode:
        app.call_later(app.run_action, action, scr)
        return
    app.action_mode(mode)
    app.call_after_refresh(lambda: app.call_later(app.run_action, action, app.screen))
