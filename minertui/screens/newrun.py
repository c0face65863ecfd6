"""The new-run form: a config file and/or fields, validated through `trinity.config.TrainConfig`
(errors shown next to the field), then started as a detached engine."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from minertui.messages import FormDraft
from trinity.errors import TrinityError
from trinity.optim.plan import forecast_for

if TYPE_CHECKING:
    from minertui.screens.common import TypedApp

# (field, label, placeholder, type) — field names are TrainConfig keys
FIELDS: list[tuple[str, str, str, type]] = [
    ("benchmarks", "benchmarks", "all (or: math500,mmlu)", list),
    ("questions", "questions", "practice or path.jsonl", str),
    ("matrix", "matrix", "practice or path.json (cached)", str),
    ("pool", "pool", "practice, openrouter …", str),
    ("encoder", "encoder", "tiny-qwen3, Qwen/Qwen3-0.6B …", str),
    ("popsize", "popsize", "32", int),
    ("generations", "generations", "60", int),
    ("patience", "patience (gens)", "off", int),
    ("m", "m (questions/cand.)", "16", int),
    ("sigma0", "σ0", "0.1", float),
    ("seed", "seed", "0", int),
    ("budget_usd", "budget $", "none", float),
]


def form_data(config_path: str, mode: str | None, values: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """(TrainConfig data, per-field errors): the config file's keys, overridden by the fields
    that are filled in; validated by TrainConfig."""
    # lazy: pydantic + PyYAML loaded only when used
    from trinity.config import DEFAULT_CONFIG, PRACTICE, absolute_paths, field_errors, read_config_file

    errors: dict[str, str] = {}
    data: dict[str, Any] = {}
    if DEFAULT_CONFIG.is_file():
        data.update(read_config_file(DEFAULT_CONFIG))
        data.pop(PRACTICE, None)
    if config_path.strip():
        try:
            doc = read_config_file(Path(config_path.strip()).expanduser())
            if doc.pop(PRACTICE, None) is not None:
                data["practice_config"] = str(Path(config_path.strip()).expanduser().resolve())
            # the form's config is written elsewhere (runs/.configs): paths must be absolute,
            # taken from the chosen file's directory as `trinity train --config` would
            data.update(absolute_paths(doc, Path(config_path.strip()).expanduser().resolve().parent))
        except TrinityError as e:
            errors["config"] = str(e)
    if mode:
        data["mode"] = mode
    if values.get("competition"):  # the Select's value; empty: the config's, else from the pool
        data["competition"] = values["competition"]
    for name, _label, _ph, kind in FIELDS:
        raw = values.get(name, "").strip()
        if not raw:
            continue
        try:
            data[name] = [b.strip() for b in raw.split(",") if b.strip()] if kind is list else kind(raw)
        except ValueError:
            errors[name] = f"not a valid {kind.__name__}"
    data = absolute_paths(data, Path.cwd())  # typed paths: from the app's working directory
    for loc, msg in field_errors(data).items():
        top = loc.split(".")[0]
        errors.setdefault(top if top in dict((f[0], 1) for f in FIELDS) or top == "competition" else "config", msg)
    for name, msg in input_errors(data).items():
        errors.setdefault(name, msg)
    return data, errors


def input_errors(data: dict[str, Any]) -> dict[str, str]:
    """What the engine would only find after it started: a questions/matrix file that is not
    there, a pool that configs/models.yaml does not name. Paths are relative to this directory,
    which is the engine's working directory too."""
    from trinity.config import PRACTICE  # lazy: pydantic + PyYAML loaded only when used
    from trinity.pool.providers import MODELS_YAML, known_pools, read_models_yaml  # lazy: PyYAML loaded only when used

    errors: dict[str, str] = {}
    for name in ("questions", "matrix"):
        v = data.get(name)
        if isinstance(v, str) and v and v != PRACTICE and not Path(v).expanduser().is_file():
            errors[name] = f"no such file: {v}; give an existing file (or practice)"
    pool = data.get("pool")
    if isinstance(pool, str) and pool and pool != PRACTICE and not data.get("base_url"):
        try:
            known = known_pools(read_models_yaml(MODELS_YAML))
            if pool not in known:
                errors["pool"] = f"unknown pool {pool!r}; known: {', '.join(sorted(known))}"
        except TrinityError as e:
            errors["pool"] = str(e)
    return errors


FORECAST_DEBOUNCE_S = 0.4  # after the last keystroke, the forecast is computed again


def forecast_reason(data: dict[str, Any], errors: dict[str, str]) -> str | None:
    """Why the form shows no computed forecast (one line), or None when it can compute one."""
    if data.get("mode", "cached") != "live":
        return "forecast: $0, replays the matrix (cached mode: no paid call)"
    for name in ("config", "questions", "matrix", "pool", "budget_usd"):
        if name in errors:
            return f"forecast: needs a valid {name}: {errors[name]}"
    if errors:
        name, msg = next(iter(errors.items()))
        return f"forecast: needs a valid {name}: {msg}"
    if not data.get("pool"):
        return "forecast: needs a pool (practice, openrouter …) for a live run"
    return None


FORECAST_SOURCE = {  # the forecast's `answer_lengths_from`, in the form's words
    "measured": "a measured run",
    "cached": "cached answers",
    "cached+prior": "cached answers and priors",
    "prior": "priors only (wide: nothing measured yet)",
}


def forecast_lines(f: dict[str, Any]) -> list[str]:
    """The engine's forecast (`trinity plan`'s numbers) in the form's few lines."""
    from trinity.optim.forecast import budget_verdict, hms  # lazy: numpy + pydantic loaded only when used

    u, w = f["usd"], f["wall_s"]
    lines = [
        f"forecast: ${u['median']:.4f}, 90% interval ${u['p05']:.4f} .. ${u['p95']:.4f}",
        f"  wall time {hms(w['median'])}, 90% interval {hms(w['p05'])} .. {hms(w['p95'])}",
        f"  {f['generations']} generations × {f['sessions_per_generation']} sessions on {f['pool']}, "
        f"from {FORECAST_SOURCE.get(f.get('answer_lengths_from', ''), 'priors')}",
    ]
    verdict = budget_verdict(f)
    if verdict is not None:
        lines.append(f"over budget: {verdict}" if f["over_budget"] else f"  {verdict}")
    return lines


def compute_forecast(data: dict[str, Any], runs_root: Path | None = None) -> list[str]:
    """The form's forecast lines for a valid live config (`trinity plan`'s function; an earlier
    run of the same pool under `runs_root` measures it); a one-line reason when the engine cannot
    forecast it (no prices, a file it cannot read)."""
    from trinity.config import validate_config  # lazy: pydantic + PyYAML loaded only when used

    try:
        return forecast_lines(forecast_for(validate_config(data, "the new-run form"), runs_root=runs_root))
    except (TrinityError, OSError, ValueError) as e:
        return [f"forecast: cannot compute: {e}"]


class NewRunScreen(ModalScreen[Path | None]):
    if TYPE_CHECKING:
        app: TypedApp  # the inherited property returns the MinerApp (typing only)
    AUTO_FOCUS = "#f-config"  # the form scrolls: without this the scroll container takes the focus
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="newrun.cancel")]
    DEFAULT_CSS = """
    NewRunScreen { align: center middle; }
    #newrun { width: 90%; max-width: 100; height: 90%; border: round $primary; background: $surface; padding: 0 1; }
    .row { height: 1; margin-bottom: 1; }
    .row Label { width: 20; padding: 0 1 0 0; }
    .row Input, .row Select { width: 1fr; }
    .err { color: $error; height: auto; padding-left: 20; margin-bottom: 1; display: none; }
    #newrun-buttons { height: 3; align-horizontal: right; }
    #newrun-forecast { height: auto; max-height: 6; color: $text-muted; }
    #newrun-forecast.over { color: $warning; }
    """

    def __init__(self, prefill: dict[str, str] | None = None) -> None:
        super().__init__()
        self.prefill = dict(prefill or {})
        self._forecast_timer: Any = None
        self._forecast_seq = 0  # a result for older fields than the latest is dropped

    def on_mount(self) -> None:
        values = self.prefill or dict(getattr(self.app, "drafts", {}).get("newrun") or {})
        for name, value in values.items():
            if name == "mode":
                if value in ("cached", "live"):
                    self.query_one("#f-mode", Select).value = value
            elif name == "config":
                self.query_one("#f-config", Input).value = value
            elif self.query(f"#f-{name}"):
                self.query_one(f"#f-{name}", Input).value = value
        self._placeholders()
        self._start_forecast()  # at once: the first line does not wait for the debounce

    def compose(self) -> ComposeResult:
        with Vertical(id="newrun"):
            yield Static("[b]New training run[/b] — leave a field empty to keep the config's value")
            with VerticalScroll():
                with Horizontal(classes="row"):
                    yield Label("config file")
                    yield Input(placeholder="configs/practice.yaml (optional)", id="f-config", compact=True)
                yield Static("", classes="err", id="e-config")
                with Horizontal(classes="row"):
                    yield Label("mode")
                    yield Select(
                        [("cached", "cached"), ("live", "live")],
                        allow_blank=True,
                        prompt="from config",
                        id="f-mode",
                        compact=True,
                    )
                yield Static("", classes="err", id="e-mode")
                with Horizontal(classes="row"):
                    yield Label("competition")
                    yield Select(
                        [("tinyrouter", "tinyrouter"), ("minirouter", "minirouter")],
                        allow_blank=True,
                        prompt="from the pool",
                        id="f-competition",
                        compact=True,
                    )
                yield Static("", classes="err", id="e-competition")
                for name, label, ph, _kind in FIELDS:
                    with Horizontal(classes="row"):
                        yield Label(label)
                        yield Input(placeholder=ph, id=f"f-{name}", compact=True)
                    yield Static("", classes="err", id=f"e-{name}")
            yield Static("forecast: …", id="newrun-forecast", markup=False)
            with Horizontal(id="newrun-buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Start", id="start", variant="primary")

    def _values(self) -> tuple[str, str | None, dict[str, str]]:
        mode = self.query_one("#f-mode", Select).value
        competition = self.query_one("#f-competition", Select).value
        values = {name: self.query_one(f"#f-{name}", Input).value for name, *_ in FIELDS}
        values["competition"] = competition if isinstance(competition, str) else ""
        return (self.query_one("#f-config", Input).value, mode if isinstance(mode, str) else None, values)

    def validate_form(self) -> tuple[dict[str, Any], dict[str, str]]:
        data, errors = form_data(*self._values())
        for name in ["config", "mode", "competition", *(f[0] for f in FIELDS)]:
            err = self.query_one(f"#e-{name}", Static)
            err.update(errors.get(name, ""))
            err.display = name in errors  # shown under its field only when there is something to say
        return data, errors

    def _placeholders(self) -> None:
        """Each empty field shows the value the chosen config file gives it (practice.yaml's
        popsize when that is chosen, not trinity.yaml's)."""
        config, mode, _values = self._values()
        data, _errors = form_data(config, mode, {})
        for name, _label, ph, _kind in FIELDS:
            v = data.get(name)
            shown = ph if v is None else ",".join(map(str, v)) if isinstance(v, list) else str(v)
            self.query_one(f"#f-{name}", Input).placeholder = shown

    def _schedule_forecast(self) -> None:
        """Recompute the forecast once the fields have been still for a moment."""
        if self._forecast_timer is not None:
            self._forecast_timer.stop()
        self._forecast_timer = self.set_timer(FORECAST_DEBOUNCE_S, self._start_forecast)

    def _start_forecast(self) -> None:
        self._forecast_timer = None
        self._forecast_seq += 1
        data, errors = form_data(*self._values())
        reason = forecast_reason(data, errors)
        if reason is not None:
            self._show_forecast(self._forecast_seq, [reason])
            return
        self.query_one("#newrun-forecast", Static).update("forecast: computing …")
        self._forecast_worker(self._forecast_seq, data)

    @work(thread=True, exclusive=True, group="newrun-forecast", exit_on_error=False)
    def _forecast_worker(self, seq: int, data: dict[str, Any]) -> None:
        try:
            lines = compute_forecast(data, getattr(self.app, "runs_root", None))
        except Exception as e:  # a preview: whatever goes wrong is a line in the form, never a crash
            lines = [f"forecast: cannot compute: {type(e).__name__}: {e}"]
        self.app.call_from_thread(self._show_forecast, seq, lines)

    def _show_forecast(self, seq: int, lines: list[str]) -> None:
        if seq != self._forecast_seq or not self.is_attached:
            return
        box = self.query_one("#newrun-forecast", Static)
        box.update("\n".join(lines))
        box.set_class(any(line.startswith("over budget") for line in lines), "over")
        if self.focused is not None:  # the field being typed in stays in view as the box grows
            self.call_after_refresh(self.focused.scroll_visible, animate=False)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.app.unsaved["newrun"] = "the new-run form"
        self._schedule_forecast()
        if event.input.id == "f-config":
            self._placeholders()
        if any(e.display for e in self.query(".err")):
            self.validate_form()  # an error goes as soon as its field is fixed

    def on_select_changed(self, event: Select.Changed) -> None:
        self._placeholders()
        self._start_forecast()  # at once: the first line does not wait for the debounce
        if any(e.display for e in self.query(".err")):
            self.validate_form()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.validate_form()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "cancel":
            self.action_cancel()
        elif event.button.id == "start":
            self.start()

    def start(self) -> None:
        data, errors = self.validate_form()
        if errors:
            self.notify("fix the fields marked in red", severity="error")
            return
        import yaml  # lazy: PyYAML loaded only when used

        from minertui.supervisor import EngineError  # lazy: PyYAML loaded only when used
        from trinity.io import atomic_write_text  # lazy: PyYAML loaded only when used
        from trinity.runs.rundir import new_run_id  # lazy: PyYAML loaded only when used

        run_id = new_run_id()
        cfg_file = (self.app.runs_root / ".configs" / f"{run_id}.yaml").resolve()  # the run dir must start empty
        try:
            atomic_write_text(
                cfg_file, "# written by minertui's new-run form\n" + yaml.safe_dump(data, sort_keys=False)
            )
            path = self.app.supervisor.start_train(["--config", str(cfg_file)], run_id=run_id)
        except (EngineError, OSError) as e:
            self.notify(str(e), severity="error")
            return
        self.app.unsaved.pop("newrun", None)
        self.app.post_message(FormDraft("newrun", {}))
        self.notify(f"started {run_id} (engine log: {self.app.supervisor.log_of(path)})")
        self.app.select_run(path)
        self.dismiss(path)

    def action_cancel(self) -> None:
        """Esc closes the form and keeps what was typed for the next `n` (the draft lives for
        the session); Start clears it."""
        config, mode, values = self._values()
        draft = {k: v for k, v in {"config": config, "mode": mode or "", **values}.items() if v}
        self.app.post_message(FormDraft("newrun", draft))
        if draft:
            self.notify("new-run form closed; what you typed is kept for the next n", timeout=4)
        self.app.unsaved.pop("newrun", None)
        self.dismiss(None)
