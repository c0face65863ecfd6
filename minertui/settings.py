"""User settings and theme files (no textual import at module level except in `load_theme`).

Settings live in `$XDG_CONFIG_HOME/minertui/settings.json` (default `~/.config/...`); tests
point XDG_CONFIG_HOME at a temp dir. Themes are TOML files: the shipped ones in `minertui/themes/`
(package data; `themes/` at the repo root links there), and the user's own in `$XDG_CONFIG_HOME/minertui/themes/`.
"""

from __future__ import annotations

import json
import os
import tomllib
import types
import typing
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any

from trinity.errors import ConfigError
from trinity.io import atomic_write_json

DEFAULT_THEME = "minertui-dark"
# package data (so a non-editable install finds them); `themes/` at the repo root links here
SHIPPED_THEMES = Path(__file__).resolve().with_name("themes")
COLOR_KEYS = (
    "primary",
    "secondary",
    "warning",
    "error",
    "success",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
)
THEME_KEYS = {"name", "dark", "variables", "luminosity_spread", "text_alpha", *COLOR_KEYS}


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "minertui"


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "minertui"


@dataclass(frozen=True)
class Settings:
    """settings.json, validated once when read. Keys this version does not name are kept in
    `other` (and written back untouched by `save_settings`): a newer app's settings survive an
    older one. A field's `metadata` holds its bounds (pydantic `Field` keywords)."""

    theme: str | None = None
    smoothing: float | None = field(default=None, metadata={"ge": 0, "lt": 1})  # Train's curve smoothing
    keymap: dict[str, Any] | None = None  # binding id -> key; each entry checked by keymap.load_keymap
    submit_miner: str | None = None
    submit_repo: str | None = None
    export_dir: str | None = None
    system_pane: bool | None = None  # Train's system pane open (remembered from the last session)
    other: dict[str, Any] = field(default_factory=dict)  # the keys not named above

    def get(self, key: str, default: Any = None) -> Any:
        """A setting by name (a named field, or a key this version does not name yet)."""
        v = getattr(self, key) if key in SETTING_TYPES else self.other.get(key)
        return default if v is None else v


def _setting_types() -> dict[str, tuple[type, ...]]:
    """Each named setting -> the types its value may already have to be taken as it is (None
    aside): `str | None` -> (str,), `dict[str, Any] | None` -> (dict,)."""
    hints = typing.get_type_hints(Settings)
    out = {}
    for f in fields(Settings):
        if f.name == "other":
            continue
        args = typing.get_args(hints[f.name]) if isinstance(hints[f.name], types.UnionType) else (hints[f.name],)
        out[f.name] = tuple(typing.get_origin(a) or a for a in args if a is not type(None))
    return out


SETTING_TYPES = _setting_types()
BOUNDS = {f.name: dict(f.metadata) for f in fields(Settings) if f.metadata}
_BOUND_OK = {
    "ge": lambda v, b: v >= b,
    "gt": lambda v, b: v > b,
    "le": lambda v, b: v <= b,
    "lt": lambda v, b: v < b,
}


def _settings_fast(data: dict[str, Any]) -> Settings | None:
    """The settings when every named value already has its type and is in bounds (what the app
    itself writes), without pydantic; None when any needs checking or converting (`_settings_slow`)."""
    for name, allowed in SETTING_TYPES.items():
        v = data.get(name)
        if v is None:
            continue
        if type(v) not in allowed:  # exact: pydantic turns 0 into 0.0 and 1 into True
            return None
        if not all(k in _BOUND_OK and _BOUND_OK[k](v, b) for k, b in BOUNDS.get(name, {}).items()):
            return None  # out of bounds (NaN too), or a bound this path does not know
        if isinstance(v, dict) and not all(type(k) is str for k in v):
            return None
    named: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items() if k in SETTING_TYPES}
    return Settings(**named, other={k: v for k, v in data.items() if k not in SETTING_TYPES})


@cache
def _settings_model() -> Any:
    """The pydantic model of `Settings` (same fields, same bounds): the slow path's validator."""
    from pydantic import ConfigDict, Field, create_model  # lazy: pydantic only for a file that needs checking

    hints = typing.get_type_hints(Settings)
    spec: dict[str, Any] = {n: (hints[n], Field(default=None, **BOUNDS.get(n, {}))) for n in SETTING_TYPES}
    return create_model("Settings", __config__=ConfigDict(frozen=True, extra="allow"), **spec)


def _settings_slow(data: dict[str, Any]) -> tuple[Settings, list[str]]:
    """Validated by pydantic: lax conversions ("0.5" -> 0.5, 1 -> True); a setting of the wrong
    type is left out (its default used) and named in one line."""
    from pydantic import ValidationError  # lazy: pydantic only for a file that needs checking

    model = _settings_model()
    errors: list[str] = []
    try:
        m = model.model_validate(data)
    except ValidationError as e:
        bad = {str(err["loc"][0]): err["msg"] for err in reversed(e.errors()) if err["loc"]}
        errors = [f'{settings_path()}: "{k}": {msg}; the default is used' for k, msg in sorted(bad.items())]
        m = model.model_validate({k: v for k, v in data.items() if k not in bad})
    return Settings(**{n: getattr(m, n) for n in SETTING_TYPES}, other=dict(m.model_extra or {})), errors


def settings_path() -> Path:
    return config_dir() / "settings.json"


def _raw_settings() -> tuple[dict[str, Any] | None, str | None]:
    """(the file's object, or None when it cannot be used; one line saying why)."""
    path = settings_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError) as e:
        why = e.msg if isinstance(e, json.JSONDecodeError) else type(e).__name__
        return None, f"{path}: not readable JSON ({why}); fix or delete it (defaults used, changes not saved)"
    if not isinstance(data, dict):
        return None, f"{path}: not a JSON object; fix or delete it (defaults used, changes not saved)"
    return data, None


def read_settings() -> tuple[Settings, list[str]]:
    """The settings and one line per problem (for an in-app message). A setting of the wrong type
    is left out (its default used) and named; the file itself is never changed here."""
    data, problem = _raw_settings()
    if data is None:
        return Settings(), [problem or ""]
    fast = _settings_fast(data)
    return (fast, []) if fast is not None else _settings_slow(data)


def load_settings() -> Settings:
    return read_settings()[0]


def save_settings(**changes: Any) -> bool:
    """Remember `changes` in settings.json; False (nothing written) when the file is there but is
    not a JSON object we can read: writing it would lose what the user has in it."""
    data, _ = _raw_settings()
    if data is None:
        return False
    data.update(changes)
    try:
        atomic_write_json(settings_path(), data)
    except OSError:
        return False  # a read-only home must not break the app; the setting just is not remembered
    return True


def theme_files() -> list[Path]:
    dirs = [SHIPPED_THEMES, config_dir() / "themes"]
    return sorted(p for d in dirs if d.is_dir() for p in d.glob("*.toml"))


def parse_theme(path: Path):
    """A `textual.theme.Theme` from a TOML file; ConfigError naming the file and the key."""
    from textual.color import Color, ColorParseError  # lazy: textual kept off the app's first frame
    from textual.theme import Theme  # lazy: textual kept off the app's first frame

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"theme file {path}: cannot read it ({e}); fix it or delete it") from None
    unknown = sorted(set(data) - THEME_KEYS)
    if unknown:
        raise ConfigError(
            f"theme file {path}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(THEME_KEYS))}"
        )
    for key in ("name", "primary"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ConfigError(f"theme file {path}: '{key}' is required and must be a string")
    if "dark" in data and not isinstance(data["dark"], bool):
        raise ConfigError(f"theme file {path}: 'dark' must be true or false")
    for key in COLOR_KEYS:
        if key in data:
            try:
                Color.parse(data[key])
            except (ColorParseError, TypeError):
                raise ConfigError(
                    f'theme file {path}: \'{key}\' = {data[key]!r} is not a colour (use e.g. "#5fafd7" or "ansi_blue")'
                ) from None
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(isinstance(v, str) for v in variables.values()):
        raise ConfigError(f"theme file {path}: [variables] must map names to strings")
    return Theme(**data)


def load_themes() -> tuple[list[Any], list[str]]:
    """(themes that loaded, one error line per file that did not)."""
    themes, errors = [], []
    for path in theme_files():
        try:
            themes.append(parse_theme(path))
        except ConfigError as e:
            errors.append(str(e))
    return themes, errors
