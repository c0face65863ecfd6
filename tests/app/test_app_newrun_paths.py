"""The new-run form writes its config under runs/.configs, so every file path in it must already
be absolute: a chosen config file's relative paths from that file's directory (as `trinity train
--config` reads them), a typed path from the app's working directory."""

from pathlib import Path

from minertui.screens.newrun import form_data


def test_paths_from_the_config_file_and_from_typed_fields(tmp_path, monkeypatch):
    proj = tmp_path / "proj"
    (proj / "data").mkdir(parents=True)
    (proj / "data" / "q.jsonl").write_text("")
    cfg = proj / "run.yaml"
    cfg.write_text("mode: cached\nquestions: data/q.jsonl\nmatrix: data/m.json\n")
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)

    data, errors = form_data(str(cfg), None, {})
    assert data["questions"] == str((proj / "data" / "q.jsonl").resolve())
    assert data["matrix"] == str((proj / "data" / "m.json").resolve())
    assert "matrix" in errors and "m.json" in errors["matrix"]  # named: it does not exist

    data, _ = form_data(str(cfg), None, {"matrix": "typed.json"})
    assert data["matrix"] == str((here / "typed.json").resolve())
    assert Path(data["questions"]).is_absolute()
