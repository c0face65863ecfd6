"""Files the app and the engine read at run time live inside the packages (package data), so a
non-editable `pip install .` has them; the repo-root paths that the docs name link to them."""

from __future__ import annotations

from pathlib import Path

import minertui
import trinity
from minertui.settings import SHIPPED_THEMES, load_themes
from trinity.config import DEFAULT_CONFIG
from trinity.pool.providers import MODELS_YAML

ROOT = Path(__file__).resolve().parents[2]


def _inside(path: Path, package) -> bool:
    return Path(package.__file__).resolve().parent in path.resolve().parents


def test_themes_are_package_data_and_the_root_folder_links_to_them():
    assert _inside(SHIPPED_THEMES, minertui) and (SHIPPED_THEMES / "__init__.py").is_file()
    names = sorted(p.name for p in SHIPPED_THEMES.glob("*.toml"))
    assert names == ["minertui-dark.toml", "minertui-light.toml"]
    assert sorted(p.name for p in (ROOT / "themes").glob("*.toml")) == names
    themes, errors = load_themes()
    assert not errors and {"minertui-dark", "minertui-light"} <= {t.name for t in themes}


def test_engine_configs_are_package_data_and_configs_links_to_them():
    for path, repo_path in ((DEFAULT_CONFIG, "configs/trinity.yaml"), (MODELS_YAML, "configs/models.yaml")):
        assert _inside(path, trinity) and path.is_file()
        assert (ROOT / repo_path).resolve() == path.resolve()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"*.yaml"' in pyproject and '"*.toml"' in pyproject  # package-data patterns that ship them
