"""Notifications when a run ends: it finished, failed, stopped on its budget, or stopped because
its provider kept failing. Three channels, each switchable in settings.json under
"notifications":

  {"bell": true,                 # the terminal bell (on by default; the only one on by default)
   "osc": false,                 # OSC 9 and OSC 777 desktop notifications (iTerm2, kitty, WezTerm,
                                 # foot, …), wrapped in tmux's passthrough when inside tmux
   "command": ["notify-send", "minertui"],   # optional: run with the event as JSON on stdin
   "timeout_s": 10,              # the command is killed after this long
   "events": {"finished": true, "failed": true, "budget": true, "provider": true}}

The command is an argv list, run without a shell, off the UI thread, with a timeout. Only ends
seen while the app watches are notified (a run that had ended before the app started is not).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

KINDS = ("finished", "failed", "budget", "provider")
LIVE = ("running", "created")
TITLES = {
    "finished": "run finished",
    "failed": "run failed",
    "budget": "run stopped: budget",
    "provider": "run stopped: provider failing",
}


@dataclass(frozen=True)
class RunEnded:
    """One run's end, as the notification channels get it (the command reads it as JSON)."""

    kind: str  # finished | failed | budget | provider
    run_id: str
    run_dir: str
    status: str
    message: str
    generations: int
    spend_usd: float

    @property
    def title(self) -> str:
        return TITLES.get(self.kind, "run ended")

    @property
    def body(self) -> str:
        text = f"{self.run_id}: {self.message or self.status}"
        return text if len(text) <= 200 else text[:199] + "…"

    def to_json(self) -> dict[str, Any]:
        return {"event": "run_" + self.kind, **asdict(self)}


@dataclass(frozen=True)
class NotifySettings:
    bell: bool = True
    osc: bool = False
    command: tuple[str, ...] = ()
    timeout_s: float = 10.0
    events: frozenset[str] = field(default_factory=lambda: frozenset(KINDS))


def parse_settings(raw: Any) -> tuple[NotifySettings, list[str]]:
    """The "notifications" entry of settings.json → (settings, one line per thing ignored)."""
    errors: list[str] = []
    if raw is None:
        return NotifySettings(), errors
    if not isinstance(raw, dict):
        return NotifySettings(), ['settings "notifications" must be an object; using the bell only']
    known = {"bell", "osc", "command", "timeout_s", "events"}
    for k in sorted(set(raw) - known):
        errors.append(f'settings "notifications": unknown key "{k}" (known: {", ".join(sorted(known))})')
    out: dict[str, Any] = {}
    for k in ("bell", "osc"):
        if k in raw:
            if isinstance(raw[k], bool):
                out[k] = raw[k]
            else:
                errors.append(f'settings "notifications.{k}" must be true or false')
    cmd = raw.get("command")
    if cmd is not None:
        if isinstance(cmd, list) and cmd and all(isinstance(a, str) and a for a in cmd):
            out["command"] = tuple(cmd)
        else:
            errors.append(
                'settings "notifications.command" must be a list of strings, e.g. ["notify-send", "minertui"] '
                "(it runs without a shell)"
            )
    if "timeout_s" in raw:
        t = raw["timeout_s"]
        if isinstance(t, (int, float)) and not isinstance(t, bool) and 0 < t <= 600:
            out["timeout_s"] = float(t)
        else:
            errors.append('settings "notifications.timeout_s" must be a number of seconds in (0, 600]')
    ev = raw.get("events")
    if ev is not None:
        if isinstance(ev, dict) and all(k in KINDS and isinstance(v, bool) for k, v in ev.items()):
            out["events"] = frozenset(k for k in KINDS if ev.get(k, True))
        else:
            errors.append(f'settings "notifications.events" maps {", ".join(KINDS)} to true or false')
    return NotifySettings(**out), errors


def classify(status: str, message: str) -> str | None:
    """Which end this is; None for a stop the miner asked for (pause, stop), which needs no alert."""
    msg = message.lower()
    if status == "finished":
        return "finished"
    if status in ("failed", "interrupted"):
        return "failed"
    if status == "stopped":
        if "budget" in msg or "out of credit" in msg:
            return "budget"
        if "interrupted by" in msg:  # SIGTERM / SIGINT: the miner's own pause or stop
            return None
        return "provider"  # unreachable, failing, an absurd charge: the pool's stops
    return None


class EndWatcher:
    """Turns successive polls into `RunEnded`s: a run seen live (running, or held by an engine)
    and then seen ended. Runs first seen already ended are remembered, never notified."""

    def __init__(self) -> None:
        self._live: dict[str, bool] = {}

    def update(self, snaps: Iterable[Any]) -> list[RunEnded]:
        ended: list[RunEnded] = []
        for s in snaps:
            key = str(s.path)
            live = s.locked or s.status in LIVE
            was = self._live.get(key)
            self._live[key] = live
            if was and not live:
                kind = classify(s.status, s.status_message)
                if kind is not None:
                    ended.append(
                        RunEnded(
                            kind,
                            str(s.id),
                            str(s.path),
                            s.status,
                            s.status_message,
                            int(s.generations_done),
                            float(s.spend_usd),
                        )
                    )
        return ended


def osc_sequences(ev: RunEnded, in_tmux: bool) -> str:
    """OSC 9 (iTerm2, WezTerm, kitty, Windows Terminal) and OSC 777 (urxvt, foot, Ghostty);
    inside tmux each goes through its DCS passthrough (`set -g allow-passthrough on`)."""
    clean = lambda s: "".join(ch for ch in s if ch.isprintable() and ch != ";")  # noqa: E731
    title, body = clean("minertui: " + ev.title), clean(ev.body)
    seqs = [f"\x1b]9;{title}: {body}\x07", f"\x1b]777;notify;{title};{body}\x07"]
    if in_tmux:
        seqs = ["\x1bPtmux;" + s.replace("\x1b", "\x1b\x1b") + "\x1b\\" for s in seqs]
    return "".join(seqs)


def run_command(argv: tuple[str, ...], ev: RunEnded, timeout_s: float) -> str:
    """Run the notify command (no shell) with the event as JSON on stdin; "" or one error line."""
    try:
        p = subprocess.run(
            list(argv),
            input=json.dumps(ev.to_json()).encode(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout_s,
            shell=False,
            start_new_session=True,
            close_fds=True,
        )
    except FileNotFoundError:
        return f'notify command "{argv[0]}" not found; fix "notifications.command" in settings.json'
    except subprocess.TimeoutExpired:
        return f"notify command {argv[0]} took over {timeout_s:g} s and was stopped"
    except OSError as e:
        return f"notify command {argv[0]} could not run: {e}"
    if p.returncode != 0:
        tail = (p.stderr or b"").decode(errors="replace").strip().splitlines()
        return f"notify command {argv[0]} exited with {p.returncode}" + (f": {tail[-1][:200]}" if tail else "")
    return ""


class Notifier:
    """Delivers `RunEnded`s on the channels the settings switch on. `write` puts raw bytes on
    the terminal (the app's driver), `bell` rings it, `spawn` runs a callable off the UI thread,
    `warn` shows a one-line problem in the app."""

    def __init__(
        self,
        settings: NotifySettings,
        write: Callable[[str], None],
        bell: Callable[[], None],
        spawn: Callable[[Callable[[], None]], None],
        warn: Callable[[str], None],
        in_tmux: bool | None = None,
    ) -> None:
        self.settings = settings
        self.write, self.bell, self.spawn, self.warn = write, bell, spawn, warn
        self.in_tmux = bool(os.environ.get("TMUX")) if in_tmux is None else in_tmux

    def deliver(self, ev: RunEnded) -> None:
        st = self.settings
        if ev.kind not in st.events:
            return
        if st.bell:
            self.bell()
        if st.osc:
            self.write(osc_sequences(ev, self.in_tmux))
        if st.command:
            argv, timeout = st.command, st.timeout_s

            def job() -> None:
                err = run_command(argv, ev, timeout)
                if err:
                    self.warn(err)

            self.spawn(job)
