"""The user's keymap (settings "keymap": {binding id: "key[,key]"}), and the command palette's list of every action of every
mode. Defaults are plain letters and digits, F1 and Ctrl+P: nothing a tmux (prefix Ctrl+B) or
screen (Ctrl+A) user loses."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

from textual.app import SystemCommand
from textual.binding import Binding

from minertui.keys import keys_of
from minertui.modes import MODE_KEYS, MODE_MODULES


def screen_class(mode: str):
    return getattr(importlib.import_module(f"minertui.screens.{mode}"), f"{mode.capitalize()}Screen")


def all_bindings(app_cls: type) -> dict[str, Binding]:
    """Every binding with an id (the keymap's names), the app's (`app_cls`) and every mode's."""
    from minertui.screens.common import ModeScreen  # lazy: PyYAML + platformdirs loaded only when used

    out: dict[str, Binding] = {}
    for cls in (app_cls, ModeScreen, *(screen_class(m) for m in MODE_MODULES)):
        for b in cls.BINDINGS:
            if isinstance(b, Binding) and b.id:
                out.setdefault(b.id, b)
    return out


def load_keymap(raw: dict[str, Any] | None, app_cls: type) -> tuple[dict[str, str], list[str]]:
    """(keymap to give `App.set_keymap`, one error line per entry that is not usable); `raw`:
    settings.json's `keymap`."""
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        return {}, ['settings "keymap" must map binding ids to keys, e.g. {"runs.new": "N"}']
    known = all_bindings(app_cls)
    keymap, errors = {}, []
    for bid, keys in raw.items():
        if bid not in known:
            errors.append(f"keymap: unknown binding id {bid!r} (see the ids in help, ?)")
        elif not isinstance(keys, str) or not keys.strip():
            errors.append(f'keymap: {bid} must be a key name like "N" or "ctrl+n"')
        else:
            keymap[bid] = keys.strip()
    return keymap, errors


def palette_commands(app, screen) -> Iterator:
    """SystemCommands for every mode switch and every described action of every mode."""
    for key, mode, label in MODE_KEYS:
        yield SystemCommand(
            f"Mode: {label}", f"Switch to the {label} mode (key {key})", lambda m=mode: app.action_mode(m)
        )
    yield SystemCommand("Help", "Keys and what each mode shows (key ?)", app.action_help)
    for mode, label in ((m, lbl) for _k, m, lbl in MODE_KEYS):
        cls = screen_class(mode)
        for b, keys in keys_of(app, cls):
            if not b.description or b.action.startswith("app."):
                continue
            yield SystemCommand(
                f"{label}: {b.description}",
                f"key {keys} in the {label} mode (id {b.id})",
                lambda m=mode, a=b.action: run_in_mode(app, m, a),
            )


def run_in_mode(app, mode: str, action: str) -> None:
    """Switch to `mode` (unless there) and run `action` on its screen once it is shown."""
    from minertui.screens.common import ModeScreen  # lazy: PyYAML + platformdirs loaded only when used

    scr = app.screen
    if isinstance(scr, ModeScreen) and scr.MODE.lower() == mode:
        app.call_later(app.run_action, action, scr)
        return
    app.action_mode(mode)
    app.call_after_refresh(lambda: app.call_later(app.run_action, action, app.screen))
