"""The new-run form chooses the competition whose router text the run trains on."""

from minertui.screens.newrun import form_data


def test_form_competition_choice_reaches_the_config():
    data, errors = form_data("", None, {"competition": "minirouter"})
    assert data["competition"] == "minirouter" and "competition" not in errors
    data, errors = form_data("", None, {"competition": ""})  # blank: from the pool
    assert data.get("competition") is None and "competition" not in errors
    _, errors = form_data("", None, {"competition": "kaggle"})
    assert "competition" in errors
