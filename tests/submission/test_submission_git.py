"""`plan_submission` / `execute_plan` / `trinity submit` against real git repositories: a bare
`upstream.git` (the competition) and `fork.git` (the miner's fork) behind GitHub-style URLs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from submission_helpers import git, isolated_env, make_repo, make_run, repo_snapshot  # noqa: F401

from trinity.cli import main
from trinity.submission.gitsubmit import SubmitRefused, execute_plan, plan_submission
from trinity.submission.history import SubmissionHistory
from trinity.submission.pack import pack_run


@pytest.fixture
def work(tmp_path):
    return make_repo(tmp_path / "git")


def _bundle(tmp_path, work, name="r1", seed=1, **kw):
    run = make_run(tmp_path / "runs" / name, seed=seed, **kw)
    return pack_run(run.path, "alice", "tinyrouter", out=work)


def _commits_on_fork_branch(work, branch="submission/alice-gen1") -> list[str]:
    fork = work.parent / "fork.git"
    return git(fork, "rev-list", f"main..{branch}").split()


def test_pack_check_submit_push_end_to_end(tmp_path, work, capsys):
    b = _bundle(tmp_path, work)
    before_head = git(work, "rev-parse", "HEAD")
    steps = []
    plan = plan_submission(b.path, work, "alice", push=True)
    assert plan.ok, plan.refusals
    assert plan.files == [
        f"submissions/alice/1/{f}" for f in ("README.md", "head_weights.npy", "receipt.json", "svf_scales.npy")
    ]
    text = "\n".join(plan.describe())
    assert "submission/alice-gen1 from refs/remotes/upstream/main" in text and "run: r1" in text
    assert "ledger head: " + b.receipt["ledger_head_hash"] in plan.commit_message
    assert (
        plan.compare_url == "https://github.com/comp-org/tinyrouter/compare/main...alice:submission/alice-gen1?expand=1"
    )

    res = execute_plan(plan, on_step=steps.append)
    assert res.ok and res.pushed and res.commit, res.message
    # one commit on the fork's branch, holding only the bundle
    assert _commits_on_fork_branch(work) == [res.commit]
    changed = git(work.parent / "fork.git", "diff-tree", "--no-commit-id", "--name-only", "-r", res.commit).split()
    assert changed == plan.files
    assert git(work.parent / "fork.git", "log", "-1", "--format=%B", res.commit).startswith(
        "sn74: alice submission submissions/alice/1"
    )
    # the user's checkout is left as it was
    assert git(work, "rev-parse", "HEAD") == before_head
    assert git(work, "symbolic-ref", "HEAD") == "refs/heads/main"
    # every git command was streamed: once running, once finished
    commands = [s.command for s in res.log]
    assert commands[0].startswith("git fetch upstream") and any(c.startswith("git push") for c in commands)
    assert all(s.status == "ok" for s in res.log)
    assert len(steps) == 2 * len(res.log)
    rec = SubmissionHistory.open().records()[-1]
    assert rec["kind"] == "submit" and rec["pushed"] and rec["commit"] == res.commit
    assert rec["bundle_hash"] == b.hash and rec["gates"]["rate_limit"] == "pass"

    # a second submission the same day is stopped by the rate-limit gate, repo untouched
    b2 = _bundle(tmp_path, work, "r2", seed=2)
    snap = repo_snapshot(work)
    plan2 = plan_submission(b2.path, work, "alice", push=True)
    assert any(r.startswith("gate rate_limit fails") for r in plan2.refusals)
    with pytest.raises(SubmitRefused, match="rate_limit"):
        execute_plan(plan2)
    assert repo_snapshot(work) == snap
    assert SubmissionHistory.open().records()[-1]["outcome"] == "refused"


def test_refusals_leave_the_repo_untouched(tmp_path, work, monkeypatch):
    b = _bundle(tmp_path, work)

    def refused(match: str, **kw) -> None:
        snap = repo_snapshot(work)
        plan = plan_submission(b.path, work, "alice", push=True, **kw)
        assert any(match in r for r in plan.refusals), plan.refusals
        with pytest.raises(SubmitRefused):
            execute_plan(plan)
        assert repo_snapshot(work) == snap

    # a tracked file changed outside the bundle
    (work / "README.md").write_text("local edit\n")
    refused("changes outside the bundle: README.md")
    git(work, "checkout", "--", "README.md")

    # a file over 10 MB in the bundle
    big = b.path / "blob.bin"
    big.write_bytes(b"\0" * (10 * 1024 * 1024 + 1))
    refused("over the 10 MB cap")
    big.unlink()

    # something that looks like a key, or the value of a configured key variable
    readme = b.path / "README.md"
    original = readme.read_text()
    readme.write_text(original + "\nsk-or-" + "v1-" + "0123456789abcdef" * 2 + "\n")  # built at run time
    refused("looks like an OpenRouter key")
    monkeypatch.setenv("CHUTES_API_KEY", "plainvalue-9f8e7d6c5b4a")
    readme.write_text(original + "\nplainvalue-9f8e7d6c5b4a\n")
    refused("the value of $CHUTES_API_KEY")
    readme.write_text(original)
    (b.path / ".env").write_text("X=1\n")
    refused("is an env file")
    (b.path / ".env").unlink()

    # a failing gate (receipt with too few generations)
    r = json.loads((b.path / "receipt.json").read_text())
    r["fitness_history"] = r["fitness_history"][:2]
    (b.path / "receipt.json").write_text(json.dumps(r))
    refused("gate receipt fails")


def test_skip_gates_is_recorded_in_the_commit(tmp_path, work):
    b = _bundle(tmp_path, work, generations=2)  # two generations: the receipt gate fails honestly
    assert any("gate receipt fails" in r for r in plan_submission(b.path, work, "alice").refusals)
    plan = plan_submission(b.path, work, "alice", skip_gates=True)
    assert plan.ok and "gates: SKIPPED (--skip-gates)" in plan.commit_message
    res = execute_plan(plan)
    assert res.ok and not res.pushed
    assert "SKIPPED" in git(work, "log", "-1", "--format=%B", "submission/alice-gen1")
    assert "git push origin submission/alice-gen1" in res.message


def test_rejected_push_then_retry_commits_once(tmp_path, work):
    b = _bundle(tmp_path, work)
    hook = work.parent / "fork.git" / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'rejected by test hook' >&2\nexit 1\n")
    hook.chmod(0o755)
    res = execute_plan(plan_submission(b.path, work, "alice", push=True))
    assert not res.ok and not res.pushed and res.commit
    assert "push to origin failed (remote: rejected by test hook;" in res.message and "trinity submit" in res.message
    assert res.continue_command and "--push" in res.continue_command
    assert git(work, "rev-parse", "submission/alice-gen1") == res.commit  # kept locally
    assert git(work.parent / "fork.git", "branch", "--list", "submission/alice-gen1") == ""
    assert not SubmissionHistory.open().records()[-1]["pushed"]

    hook.unlink()
    plan = plan_submission(b.path, work, "alice", push=True)  # the failed push is no attempt
    assert plan.ok and any("already holds this bundle" in n for n in plan.notes)
    res2 = execute_plan(plan)
    assert res2.ok and res2.pushed and res2.commit == res.commit
    assert [s.status for s in res2.log if s.name == "commit"] == ["skipped"]
    assert _commits_on_fork_branch(work) == [res.commit]


def test_branch_with_unrelated_commits_is_refused(tmp_path, work):
    b = _bundle(tmp_path, work)
    git(work, "switch", "-q", "-c", "submission/alice-gen1")
    (work / "hack.py").write_text("print('x')\n")
    git(work, "add", "hack.py")
    git(work, "commit", "-q", "-m", "unrelated change")
    git(work, "switch", "-q", "main")
    snap = repo_snapshot(work)
    plan = plan_submission(b.path, work, "alice", push=True)
    assert any("unrelated" in r and "unrelated change" in r for r in plan.refusals)
    with pytest.raises(SubmitRefused):
        execute_plan(plan)
    assert repo_snapshot(work) == snap


def test_next_day_submission_goes_on_top_of_the_previous_one(tmp_path, work):
    b1 = _bundle(tmp_path, work)
    res1 = execute_plan(plan_submission(b1.path, work, "alice", push=True, branch="sn74-alice"))
    assert res1.ok
    b2 = _bundle(tmp_path, work, "r2", seed=2)
    hist = SubmissionHistory.open()
    day_later = [dict(r, unix=r["unix"] - 90_000) for r in hist.records()]  # pretend it was yesterday
    hist.path.write_text("".join(json.dumps(r) + "\n" for r in day_later))
    # as if from another clone: no local branch, and a stale remote-tracking ref is not trusted
    git(work, "branch", "-D", "sn74-alice")
    git(work, "update-ref", "-d", "refs/remotes/origin/sn74-alice", check=False)
    plan = plan_submission(b2.path, work, "alice", push=True, branch="sn74-alice")
    assert plan.ok, plan.refusals
    res2 = execute_plan(plan)
    assert res2.ok, res2.message
    assert _commits_on_fork_branch(work, "sn74-alice") == [res2.commit, res1.commit]  # on top of the fork's tip
    assert git(work, "rev-parse", "sn74-alice") == res2.commit
    assert git(work, "diff-tree", "--no-commit-id", "--name-only", "-r", res2.commit).split() == [
        f"submissions/alice/2/{f}" for f in ("README.md", "head_weights.npy", "receipt.json", "svf_scales.npy")
    ]


def test_diverged_local_and_fork_branches_are_refused(tmp_path, work):
    b1 = _bundle(tmp_path, work)
    assert execute_plan(plan_submission(b1.path, work, "alice", push=True, branch="sn74-alice")).ok
    # rewrite the local branch: a different related commit on the base
    git(work, "update-ref", "refs/heads/sn74-alice", git(work, "rev-parse", "upstream/main"))
    git(work, "switch", "-q", "sn74-alice")
    (work / "submissions" / "alice" / "note.txt").write_text("x\n")
    git(work, "add", "submissions/alice/note.txt")
    git(work, "commit", "-q", "-m", "local only")
    git(work, "switch", "-q", "main")
    b2 = _bundle(tmp_path, work, "r2", seed=2)
    SubmissionHistory.open().path.unlink()  # no rate limit in the way
    snap = repo_snapshot(work)
    plan = plan_submission(b2.path, work, "alice", push=True, branch="sn74-alice")
    assert any("have diverged" in r for r in plan.refusals), plan.refusals
    with pytest.raises(SubmitRefused):
        execute_plan(plan)
    assert repo_snapshot(work) == snap


def test_cli_submit_dry_run_and_refusal(tmp_path, work, capsys):
    b = _bundle(tmp_path, work)
    snap = repo_snapshot(work)
    assert main(["submit", str(b.path), "--repo", str(work), "--miner", "alice", "--push", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "branch      submission/alice-gen1" in out and "dry run: nothing was done" in out
    assert repo_snapshot(work) == snap
    (work / "README.md").write_text("dirty\n")
    assert main(["submit", str(b.path), "--repo", str(work), "--miner", "alice", "--push"]) == 5
    err = capsys.readouterr().err
    assert err.startswith("error: submission refused: the repository has changes outside the bundle")
    assert main(["submit", str(b.path), "--repo", str(tmp_path), "--miner", "alice"]) == 2
    assert "not a git repository" in capsys.readouterr().err


def test_bundle_outside_the_repo_is_refused(tmp_path, work):
    run = make_run(tmp_path / "runs" / "r1")
    b = pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "elsewhere")
    with pytest.raises(Exception, match="not inside the repository"):
        plan_submission(b.path, work, "alice")


def test_minirouter_bundle_submits_final_model(tmp_path, work):
    run = make_run(tmp_path / "runs" / "r1")
    b = pack_run(run.path, "alice", "minirouter", out=work)
    plan = plan_submission(b.path, work, "alice", push=True)
    # MiniRouter's PR check needs the MiniBridge identity used for evaluation
    assert any("pass --owner-id" in r for r in plan.refusals) and any("pass --key-id" in r for r in plan.refusals)
    plan = plan_submission(b.path, work, "alice", push=True, owner_id="own-1", key_id="key-1")
    assert plan.branch == "sn74-alice" and "- `owner_id`: own-1" in plan.pr_body
    res = execute_plan(plan)
    assert res.ok and res.pushed
    files = git(work, "diff-tree", "--no-commit-id", "--name-only", "-r", res.commit).split()
    assert files == [f"submissions/final_model/{f}" for f in ("best_theta.npy", "history.json", "summary.json")]
    assert np.array_equal(np.load(b.path / "best_theta.npy"), np.load(run.best_theta))


def test_unreachable_remote_changes_nothing_and_says_how_to_continue(tmp_path, work):
    b = _bundle(tmp_path, work)
    git(work, "remote", "set-url", "upstream", str(tmp_path / "gone.git"))  # a remote that is not there
    snap = repo_snapshot(work)
    res = execute_plan(plan_submission(b.path, work, "alice", push=True))
    assert not res.ok and res.commit is None and not res.pushed
    assert res.message.startswith("fetching main from upstream failed") and "nothing was changed" in res.message
    assert "trinity submit" in res.message and res.log[-1].status == "failed"
    assert repo_snapshot(work) == snap
    rec = SubmissionHistory.open().records()[-1]
    assert rec["outcome"] == "failed" and not rec["pushed"]


def test_bundle_numbers_committed_on_any_branch_are_not_reused(tmp_path, work):
    import shutil

    b1 = _bundle(tmp_path, work)
    assert execute_plan(plan_submission(b1.path, work, "alice", push=True)).ok
    shutil.rmtree(b1.path)  # the main checkout no longer shows submissions/alice/1
    b2 = _bundle(tmp_path, work, "r2", seed=2)
    assert b2.path.name == "2"


def test_a_taken_bundle_path_is_never_overwritten(tmp_path, work):
    import shutil

    b1 = _bundle(tmp_path, work)
    assert execute_plan(plan_submission(b1.path, work, "alice", push=True)).ok
    # a different bundle under the same path (copied by hand, bypassing pack's numbering)
    shutil.rmtree(b1.path)
    b2 = _bundle(tmp_path, work, "r2", seed=2)
    shutil.move(b2.path, b1.path)
    SubmissionHistory.open().path.unlink()
    snap = repo_snapshot(work)
    plan = plan_submission(b1.path, work, "alice", push=True)
    assert any("already exists on submission/alice-gen1" in r for r in plan.refusals), plan.refusals
    with pytest.raises(SubmitRefused):
        execute_plan(plan)
    assert repo_snapshot(work) == snap


def test_rate_limit_counts_a_push_made_without_minertui(tmp_path, work):
    """A submission pushed by hand (or from another machine, then fetched) is in the repository's
    history, not in minertui's: the rate-limit gate reads the commits under submissions/<miner>/
    of the last 24 h on every branch, local and remote-tracking."""
    from trinity.submission.gates import check_bundle

    b = _bundle(tmp_path, work)
    g = {r.name: r for r in check_bundle(b.path, history=tmp_path / "h.jsonl").results}["rate_limit"]
    assert g.status == "pass" and g.numbers["repo_commits_24h"] == 0 and g.numbers["repo"] == str(work.resolve())

    # Someone pushes an earlier bundle of alice's to the fork by hand; this clone fetches it.
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(work.parent / "fork.git"), "other")
    (other / "submissions" / "alice" / "0").mkdir(parents=True)
    (other / "submissions" / "alice" / "0" / "README.md").write_text("manual\n")
    git(other, "add", ".")
    git(other, "-c", "user.name=a", "-c", "user.email=a@x", "commit", "-q", "-m", "alice: by hand")
    git(other, "push", "-q", "origin", "HEAD:manual")
    git(work, "fetch", "-q", "origin")

    g = {r.name: r for r in check_bundle(b.path, history=tmp_path / "h.jsonl").results}["rate_limit"]
    assert g.status == "fail" and g.numbers["repo_commits_24h"] == 1 and "next submission allowed" in g.reason
    # A day later the limit is free again.
    import time

    later = time.time() + 24 * 3600 + 60
    g = {r.name: r for r in check_bundle(b.path, history=tmp_path / "h.jsonl", now=later).results}["rate_limit"]
    assert g.status == "pass"


def test_submit_help_names_the_branch_one_way(capsys):
    """The branch convention is stated once (--branch: TinyRouter submission/<miner>-gen<n>,
    MiniRouter sn74-<miner>); no other line contradicts it."""
    import pytest

    from trinity.cli import main

    with pytest.raises(SystemExit):
        main(["submit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert text.count("sn74-<miner>") == 1 and "submission/<miner>-gen<n>" in text
