"""settings.json as a typed model: validated once, a broken file is one in-app line, nothing lost."""

from __future__ import annotations

import json

import pytest

from minertui.settings import Settings, load_settings, read_settings, save_settings, settings_path


def test_defaults_when_there_is_no_file():
    assert not settings_path().exists()
    assert read_settings() == (Settings(), [])


def test_a_file_that_is_not_json_is_one_line_and_is_never_overwritten():
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"theme": "minertui-light", ')  # cut off by an editor crash
    s, errors = read_settings()
    assert s == Settings() and len(errors) == 1 and "\n" not in errors[0]
    assert str(path) in errors[0] and "not readable JSON" in errors[0] and "changes not saved" in errors[0]
    assert save_settings(theme="minertui-dark") is False
    assert path.read_text() == '{"theme": "minertui-light", '  # what the user had is still there
    path.write_text("[1, 2]")
    assert "not a JSON object" in read_settings()[1][0]


def test_a_setting_of_the_wrong_type_is_named_and_the_rest_still_apply():
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"theme": "minertui-light", "smoothing": 2, "keymap": ["N"], "future_key": 1}))
    s, errors = read_settings()
    assert s.theme == "minertui-light" and s.smoothing is None and s.keymap is None
    assert s.get("future_key") == 1  # a key a newer app wrote is kept
    assert len(errors) == 2 and all(str(path) in e and "\n" not in e for e in errors)
    assert any('"smoothing"' in e and "less than 1" in e for e in errors)
    assert any('"keymap"' in e for e in errors)
    # saving another setting keeps every key as it was, the broken ones included
    assert save_settings(submit_miner="alice") is True
    assert json.loads(path.read_text()) == {
        "theme": "minertui-light",
        "smoothing": 2,
        "keymap": ["N"],
        "future_key": 1,
        "submit_miner": "alice",
    }
    assert load_settings().submit_miner == "alice"


async def test_the_app_says_what_is_wrong_with_settings_in_one_notification(tmp_path):
    from minertui.app import MinerApp

    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    app = MinerApp(runs_root=tmp_path / "runs", poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        notes = [n.message for n in app._notifications]
        assert any("settings.json" in m and "not readable JSON" in m for m in notes), notes
        assert app.theme == "minertui-dark"  # defaults, the app runs
    assert path.read_text() == "{not json"  # the theme change on start did not overwrite it


NAN = float("nan")
# (the file's object, whether the fast path takes it as it is)
SETTINGS_FILES = [
    ({}, True),
    ({"theme": "minertui-light"}, True),
    ({"theme": None, "smoothing": None, "keymap": None, "system_pane": None}, True),
    ({"smoothing": 0.0}, True),
    ({"smoothing": 0.6}, True),
    ({"smoothing": 0.999}, True),
    ({"keymap": {"mode.runs": "R", "app.help": "f1"}}, True),
    ({"keymap": {}}, True),
    ({"submit_miner": "alice", "submit_repo": "alice/trinity", "export_dir": "/tmp/x"}, True),
    ({"system_pane": True}, True),
    ({"system_pane": False, "theme": "t", "smoothing": 0.25}, True),
    ({"future_key": 1, "notifications": {"bell": True}}, True),
    ({"other": {"a": 1}, "theme": "x"}, True),  # a file key named like the catch-all field
    ({"theme": ""}, True),
    ({"smoothing": 0}, False),  # int -> 0.0
    ({"smoothing": 1}, False),  # out of bounds
    ({"smoothing": 1.0}, False),
    ({"smoothing": -0.1}, False),
    ({"smoothing": NAN}, False),
    ({"smoothing": "0.5"}, False),  # a string pydantic reads as a number
    ({"smoothing": "smooth"}, False),
    ({"smoothing": True}, False),
    ({"system_pane": 1}, False),  # -> True
    ({"system_pane": "yes"}, False),
    ({"system_pane": 2}, False),
    ({"system_pane": 1.0}, False),
    ({"theme": 3}, False),
    ({"theme": ["a"]}, False),
    ({"keymap": ["N"]}, False),
    ({"keymap": "N"}, False),
    ({"theme": "minertui-light", "smoothing": 2, "keymap": ["N"], "future_key": 1}, False),
    ({"submit_miner": 12, "export_dir": False, "system_pane": "off"}, False),
]


@pytest.mark.parametrize(("data", "fast"), SETTINGS_FILES, ids=[json.dumps(d)[:40] for d, _ in SETTINGS_FILES])
def test_the_fast_read_gives_what_pydantic_gives(data, fast):
    """A file whose values already have their types is read without pydantic; the result is
    exactly pydantic's (same values, same types); any other file goes through pydantic, whose
    messages name each bad setting."""
    from minertui.settings import _settings_fast, _settings_slow

    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    slow, slow_errors = _settings_slow(json.loads(path.read_text()))
    got = _settings_fast(json.loads(path.read_text()))
    assert (got is not None) == fast
    if got is not None:
        assert slow_errors == [] and repr(got) == repr(slow) and got == slow
    s, errors = read_settings()
    assert repr(s) == repr(slow) and errors == slow_errors
    assert all(str(path) in e and "\n" not in e and "the default is used" in e for e in errors)
