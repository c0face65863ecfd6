"""User settings and theme files (no textual import at module level except in `load_theme`).

Settings live in `$XDG_CONFIG_HOME/minertui/settings.json` (default `~/.config/...`); tests
point XDG_CONFIG_HOME at a temp dir. Themes are TOML files: the shipped ones in `minertui/themes/`
(package data; `themes/` at the repo root links there), and the user's own in `$XDG_CONFIG_HOME/minertui/themes/`.
"""

from __future__ import annotations

import json
import os
import tomllib
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


def load_settings() -> dict[str, Any]:
    path = config_dir() / "settings.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_settings(**changes: Any) -> None:
    data = load_settings()
    data.update(changes)
    try:
        atomic_write_json(config_dir() / "settings.json", data)
    except OSError:
        pass  # a read-only home must not break the app; the setting just is not remembered


def theme_files() -> list[Path]:
    dirs = [SHIPPED_THEMES, config_dir() / "themes"]
    return sorted(p for d in dirs if d.is_dir() for p in d.glob("*.toml"))


def parse_theme(path: Path):
    """A `textual.theme.Theme` from a TOML file; ConfigError naming the file and the key."""
    from textual.color import Color, ColorParseError
    from textual.theme import Theme

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
