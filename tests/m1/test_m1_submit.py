"""`trinity m1 submit`: a checked pack goes on its own branch of a local clone, in one commit."""

from __future__ import annotations

import subprocess

import numpy as np

from trinity.cli import main
from trinity.competition import m1


def _git(repo, *a):
    return subprocess.run(["git", "-C", str(repo), *a], capture_output=True, text=True, check=True).stdout.strip()


def test_submit_commits_the_pack_on_its_branch(tmp_path, capsys):
    repo = tmp_path / "clone"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "m@example.com")
    _git(repo, "config", "user.name", "m")
    (repo / "README.md").write_text("x\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "init")
    pack = m1.M1Pack("5-domain", "penultimate", 16, np.ones((5, 16)), np.ones((5, 16)), meta={"miner": "alice"})
    src = pack.save(tmp_path / "pack")

    assert main(["m1", "submit", str(src), "--repo", str(repo), "--miner", "alice", "--dry-run"]) == 0
    assert _git(repo, "branch", "--show-current") == "main"
    assert main(["m1", "submit", str(src), "--repo", str(repo), "--miner", "alice"]) == 0
    out = capsys.readouterr().out
    assert "submission/alice-m1-5-domain" in out and "[PASS] rate_limit" in out
    assert _git(repo, "branch", "--show-current") == "submission/alice-m1-5-domain"
    files = _git(repo, "show", "--name-only", "--format=%s", "HEAD").splitlines()
    assert files[0] == "[submission] alice m1 — 5-domain penultimate"
    assert sorted(f for f in files[1:] if f) == [
        f"submissions/alice/m1/{n}" for n in ("W_diff.npy", "W_domain.npy", "config.json")
    ]

    # a recorded attempt today: the rate limit refuses, nothing is committed
    m1.append_attempt(repo, "alice", "submissions/alice/m1", ok=True)
    head = _git(repo, "rev-parse", "HEAD")
    assert main(["m1", "submit", str(src), "--repo", str(repo), "--miner", "alice"]) == 2
    assert "fails the competition's gates" in capsys.readouterr().err
    assert _git(repo, "rev-parse", "HEAD") == head


def test_submit_needs_a_clone(tmp_path, capsys):
    pack = m1.M1Pack("5-domain", "penultimate", 4, np.ones((5, 4)), np.ones((5, 4))).save(tmp_path / "p")
    assert main(["m1", "submit", str(pack), "--repo", str(tmp_path), "--miner", "a"]) == 2
    assert "not a git clone" in capsys.readouterr().err


def test_ordinary_commands_point_m1_runs_and_packs_to_trinity_m1(tmp_path, capsys):
    run = tmp_path / "m1run"
    run.mkdir()
    (run / "run.json").write_text('{"mode": "m1", "status": "finished"}')
    pack = m1.M1Pack("5-domain", "penultimate", 4, np.ones((5, 4)), np.ones((5, 4))).save(tmp_path / "p")
    for argv, want in (
        (["pack", str(run), "--miner", "alice"], f"trinity m1 pack {run} --miner NAME"),
        (["eval", str(run)], f"trinity m1 eval {run}"),
        (["score", str(run)], f"trinity m1 score {run} --king PACK"),
        (["check", str(pack)], f"trinity m1 check {pack} --miner NAME"),
        (["submit", str(pack), "--repo", str(tmp_path), "--miner", "a"], f"trinity m1 submit {pack}"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert want in err and err.count("\n") == 1, (argv, err)
