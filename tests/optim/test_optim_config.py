"""TrainConfig / load_config: defaults, overrides, one-line errors naming the key and its source."""

from pathlib import Path

import pytest

from trinity.config import DEFAULT_CONFIG, TrainConfig, field_errors, load_config
from trinity.errors import ConfigError


def test_defaults_file_matches_the_model_defaults():
    # configs/trinity.yaml documents the defaults; it must not drift from TrainConfig's
    assert load_config(None).model_dump() == TrainConfig().model_dump()
    assert DEFAULT_CONFIG.is_file()


def test_file_then_flags_override(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("popsize: 8\nm: 4\nseed: 3\n")
    cfg = load_config(f, {"popsize": 12, "seed": None})
    assert (cfg.popsize, cfg.m, cfg.seed, cfg.generations) == (12, 4, 3, 60)


def test_practice_section_is_allowed_and_recorded():
    cfg = load_config("configs/practice.yaml")
    assert cfg.questions == "practice" and cfg.matrix == "practice"
    assert cfg.practice_config and Path(cfg.practice_config).samefile("configs/practice.yaml")


@pytest.mark.parametrize(
    "text, overrides, needle",
    [
        ("popsize: 4\nbogus: 1\n", {}, "c.yaml: bogus: unknown key"),
        ("popsize: 1\n", {}, "c.yaml: popsize: Input should be greater than or equal to 2"),
        ("splits: {train: 0.5, val: 0.1, test: 0.1}\n", {}, "splits: train + val + test must sum to 1"),
        ("mode: turbo\n", {}, "c.yaml: mode:"),
        ("", {"sigma0": -1.0}, "--sigma0: Input should be greater than 0"),
        ("- a\n- b\n", {}, "must be a mapping"),
        ("popsize: [\n", {}, "is not valid YAML"),
    ],
)
def test_bad_configs_give_one_line_errors(tmp_path, text, overrides, needle):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(f, overrides)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")


def test_field_errors_for_forms():
    errs = field_errors({"popsize": 1, "foo": 2, "temperature": 0})
    assert set(errs) == {"popsize", "foo", "temperature"}
    assert field_errors({"popsize": 8}) == {}


def test_hash_ignores_resumable_keys_only():
    a = TrainConfig(questions="q.jsonl", matrix="m.json")
    assert a.hash() == a.model_copy(update={"generations": 5, "device": "cpu", "budget_usd": 2.0}).hash()
    assert a.hash() != a.model_copy(update={"seed": 1}).hash()
    assert a.hash() != a.model_copy(update={"popsize": 8}).hash()


def test_benchmarks_as_a_comma_string(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("benchmarks: math500, mmlu\n")
    assert load_config(f).benchmarks == ["math500", "mmlu"]


def test_a_whole_config_rule_names_its_source_once():
    # cached mode with questions but no matrix breaks a rule of the config, not of one key
    with pytest.raises(ConfigError) as e:
        load_config(None, {"mode": "cached", "questions": "q.jsonl", "matrix": None})
    assert str(e.value) == "config: cached mode needs both questions and matrix (or neither, to be set later)"


def test_relative_paths_in_a_config_file_are_taken_from_its_directory(tmp_path, monkeypatch):
    from trinity.config import load_config

    proj = tmp_path / "proj"
    (proj / "data").mkdir(parents=True)
    cfg = proj / "run.yaml"
    cfg.write_text("questions: data/q.jsonl\nmatrix: data/m.json\ncache_path: ~/c.sqlite\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    c = load_config(cfg).resolved()
    assert c["questions"] == str((proj / "data" / "q.jsonl").resolve())
    assert c["matrix"] == str((proj / "data" / "m.json").resolve())
    assert c["cache_path"] == str(Path("~/c.sqlite").expanduser().resolve())  # ~ is not relative
    # A flag is relative to the working directory, like any command-line path.
    c = load_config(cfg, {"questions": "q2.jsonl"}).resolved()
    assert c["questions"] == str((elsewhere / "q2.jsonl").resolve())
