"""The competition profiles as data: names, pools, θ lengths, defaults, the rewards notice."""

from __future__ import annotations

import json

import pytest

from trinity.competition.notice import rewards_notice
from trinity.competition.profiles import (
    MINIROUTER_PROFILE as MR,
)
from trinity.competition.profiles import (
    PROFILES,
    competition_for_pool,
    get_profile,
    run_competition,
    theta_length,
)
from trinity.competition.profiles import (
    TINYROUTER_PROFILE as TR,
)
from trinity.errors import TrinityError


def test_profiles_and_unknown_names():
    assert set(PROFILES) == {"tinyrouter", "minirouter"}
    assert get_profile("tinyrouter") is TR and get_profile("minirouter") is MR
    with pytest.raises(TrinityError) as e:
        get_profile("bigrouter")
    assert str(e.value) == "unknown competition 'bigrouter'; use one of: tinyrouter, minirouter"
    with pytest.raises(AttributeError):  # frozen
        TR.name = "x"  # type: ignore[misc]


def test_theta_length_rule():
    # (n_models + 3)·1024 + 7168
    assert theta_length(3) == 13_312 and theta_length(4) == 14_336
    assert TR.expected_theta_length() == 13_312
    assert MR.expected_theta_length() == 13_312  # the 3-model Chutes pool
    assert MR.expected_theta_length(list(MR.validator_pools["minibridge"])) == 14_336
    assert MR.expected_theta_length(["a", "b", "c", "d"]) == 14_336  # as many as summary.json lists


def test_pool_names_are_the_receipts_short_names():
    # TinyRouter constants.py DEFAULT_POOL_MODELS, in router order
    assert TR.short_names(["qwen/qwen3.5-35b-a3b", "google/gemini-3.1-flash-lite", "deepseek/deepseek-v4-flash"]) == [
        "qwen3.5-35b-a3b",
        "gemini-3.1-flash-lite",
        "deepseek-v4-flash",
    ]
    assert TR.validator_pools["openrouter"] == ("qwen3.5-35b-a3b", "gemini-3.1-flash-lite", "deepseek-v4-flash")
    # MiniRouter configs/models.chutes.yaml `name`s
    assert MR.short_names(["deepseek-ai/DeepSeek-V3.2-TEE", "zai-org/GLM-5-TEE", "moonshotai/Kimi-K2.5-TEE"]) == [
        "deepseek-v3p2",
        "glm-5",
        "kimi-k2p5",
    ]
    assert TR.short_name("simulated/coder") == "simulated/coder"  # not a competition model: unchanged


def test_router_input_fields_for_the_encoder_side():
    assert TR.encoder_marker is True and MR.encoder_marker is False
    assert (TR.transcript_style, MR.transcript_style) == ("tinyrouter", "minirouter")


@pytest.mark.parametrize(
    "meta, override, expected",
    [
        ({"competition": "minirouter", "pool": "openrouter"}, None, "minirouter"),  # run.json wins
        ({"pool": "openrouter"}, None, "tinyrouter"),
        ({"pool": "chutes"}, None, "minirouter"),
        ({"config": {"pool": "minibridge"}}, None, "minirouter"),
        ({"pool": "practice"}, None, "tinyrouter"),
        ({}, None, "tinyrouter"),
        ({"competition": "tinyrouter"}, "minirouter", "minirouter"),  # the flag wins
    ],
)
def test_run_competition_defaults(meta, override, expected):
    assert run_competition(meta, override).name == expected


def test_pool_defaults():
    assert [competition_for_pool(p) for p in ("openrouter", "chutes", "minibridge", "local", None)] == [
        "tinyrouter",
        "minirouter",
        "minirouter",
        "tinyrouter",
        "tinyrouter",
    ]


def test_gate_order_and_blocking():
    assert [(g.name, g.theirs, g.blocking) for g in TR.gates] == [
        ("rate_limit", "rate_limit", True),
        ("weight_sanity", "weights", True),
        ("duplicate", "duplicate", True),
        ("receipt", "receipt", True),
        ("ledger", "ledger_cost", True),
        ("schema", "pack_schema", True),
        ("theta_roundtrip", "theta_integrity", True),
        ("frozen_files", None, True),
    ]
    assert TR.advisories == ("fitness_history_sequence", "ledger_call_volume", "head_routing_diversity")
    assert [g.name for g in MR.gates if g.blocking] == ["weight_sanity"]


def test_rewards_notice_is_shipped_and_user_refreshable(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    n = rewards_notice()
    assert "stopped paying both repositories on 2026-07-31" in n.text and "#1675" in n.source
    assert n.problem is None and n.line().endswith("(entrius/gittensor PR #1675, checked 2026-08-01)")
    user = tmp_path / "minertui" / "rewards_notice.json"
    user.parent.mkdir()
    user.write_text(
        json.dumps(
            {
                "text": "Both repositories are listed again.",
                "checked": "2026-09-01",
                "source": "master_repositories.json",
            }
        )
    )
    assert rewards_notice().text == "Both repositories are listed again." and rewards_notice().path == str(user)
    user.write_bytes(b"\xff\xfe not json")
    n = rewards_notice()
    assert "stopped paying" in n.text and n.problem and str(user) in n.problem  # shipped copy, and why


def test_pack_and_check_take_the_competition_from_run_json_and_refuse_a_mismatch(tmp_path, monkeypatch, capsys):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "submission"))
    from submission_helpers import make_run

    from trinity.cli import main

    monkeypatch.setenv("MINERTUI_DATA_DIR", str(tmp_path / "data"))
    run = make_run(tmp_path / "r", competition="minirouter")  # what i11b's `train --competition` records
    assert main(["pack", str(run.path), "--miner", "alice", "--out", str(tmp_path / "repo")]) == 0
    assert "submissions/final_model" in capsys.readouterr().out
    assert (
        main(["pack", str(run.path), "--miner", "alice", "--format", "tinyrouter", "--out", str(tmp_path / "repo")])
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("error: the run is for MiniRouter") and "--competition tinyrouter" in err
    assert len(err.strip().splitlines()) == 1
    bundle = tmp_path / "repo" / "submissions" / "final_model"
    assert main(["check", str(bundle), "--competition", "tinyrouter"]) == 2
    err = capsys.readouterr().err
    assert "is a minirouter bundle; TinyRouter takes tinyrouter bundles" in err and len(err.strip().splitlines()) == 1
    assert main(["check", str(bundle)]) == 0
    assert "MiniRouter would say: OK — bundle looks submit-ready." in capsys.readouterr().out


def test_the_theta_rule_and_the_names_have_one_source():
    """The profile's θ rule and model names are the router-text module's, and the rule is the
    router's own layout at Qwen3-0.6B size."""
    from trinity.competition import profiles, text
    from trinity.model.theta import theta_size

    for n in (3, 4):
        assert profiles.theta_length(n) == text.theta_length(n) == theta_size(n, 1024, 7 * 1024)
    assert dict(profiles.TINYROUTER_PROFILE.model_names) == dict(text.TINYROUTER_NAMES)
    assert profiles.TINYROUTER_PROFILE.encoder_marker and not profiles.MINIROUTER_PROFILE.encoder_marker
    assert profiles.competition_for_pool("chutes") == text.resolve_competition(None, "chutes") == "minirouter"
