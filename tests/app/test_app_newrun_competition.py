"""The new-run form chooses the competition whose router text the run trains on, and an early stop."""

from minertui.screens.newrun import form_data


def test_form_competition_choice_reaches_the_config():
    data, errors = form_data("", None, {"competition": "minirouter"})
    assert data["competition"] == "minirouter" and "competition" not in errors
    data, errors = form_data("", None, {"competition": ""})  # blank: from the pool
    assert data.get("competition") is None and "competition" not in errors
    _, errors = form_data("", None, {"competition": "kaggle"})
    assert "competition" in errors


def test_form_patience_reaches_the_config():
    data, errors = form_data("", None, {"patience": "3"})
    assert data["patience"] == 3 and "patience" not in errors
    data, errors = form_data("", None, {"patience": ""})  # blank: every generation runs
    assert data.get("patience") is None and "patience" not in errors
    for bad in ("0", "soon"):
        _, errors = form_data("", None, {"patience": bad})
        assert "patience" in errors, bad
