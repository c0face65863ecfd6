"""`trinity bench learning --live` end to end at minimal sizes (tiny-qwen3, the stand-in pool over
loopback): both curves, $ that only grows, the server's count equal to the run directories'
ledgers, and Train's accuracy-vs-$ chart on the live runs it leaves behind."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path

import pytest

from trinity.config import DEFAULT_LABEL_TARGETS, RECIPE_PER_GROUP
from trinity.perf import learning
from trinity.perf.learning_live import ledger_usd, print_text

# two small live trainings (6 questions: 2 train, 2 val, 2 test), each stopped twice for a live
# evaluation (the new recipe also after its warm start alone), plus a collect of up to RECIPE_PER_GROUP training
# questions per topic (here: all train questions, one per topic)
# one worker runs the module: the bench runs once, in the module fixture, for every test
pytestmark = [pytest.mark.timeout(1200), pytest.mark.xdist_group("live-bench")]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    keep = tmp_path_factory.mktemp("live-bench")
    parser = argparse.ArgumentParser()
    learning.register(parser.add_subparsers())
    args = parser.parse_args(
        [
            "learning",
            "--live",
            "--topics",
            "math,mc",
            "--per-topic",
            "3",
            "--splits",
            "0.4,0.3,0.3",
            "--generations",
            "2",
            "--popsize",
            "2",
            "--m",
            "2",
            "--eval-every",
            "1",
            "--collect-k",
            "1",
            "--collect-max-k",
            "3",
            "--keep",
            str(keep),
            "--json",
        ]
    )
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert learning.run(args) == 0
    out = json.loads(printed.getvalue())
    (keep / "out.json").write_text(json.dumps(out))
    return args, keep


def test_live_bench_json_curves_and_ledgers(bench, capsys):
    args, keep = bench
    out = json.loads((keep / "out.json").read_text())
    recipes = out["recipes"]
    assert set(recipes) == {"old", "new"}
    for name, r in recipes.items():
        pts = r["points"]
        assert [p["gen"] for p in pts] == ([0, 1, 2] if name == "new" else [1, 2])  # new: its warm start alone first
        usd = [p["usd"] for p in pts]
        assert usd[0] > 0 and all(b >= a for a, b in zip(usd, usd[1:])), usd  # cumulative $ only grows
        assert all(0.0 <= p["acc"] <= 1.0 and p["avg_turns"] >= 1 for p in pts)
        run = Path(r["run_dir"])
        calls = sum(v["calls"] for v in r["server_by_model"].values())
        tol = calls * 1e-6  # the ledger keeps whole micro-dollars per call
        # the curve's $ (the server's count, evaluation calls left out) is the ledgers' training + collect $
        assert pts[-1]["ledger_usd"] == pytest.approx(pts[-1]["usd"], abs=tol)
        # and everything the server billed is in the run's ledger (evaluation too) and collect's
        collect = keep / "new-matrix.ledger.jsonl"
        whole = ledger_usd(run / "ledger.jsonl", skip_eval=False) + (ledger_usd(collect) if name == "new" else 0.0)
        assert whole == pytest.approx(r["server_total_usd"], abs=tol)
        assert r["server_eval_usd"] > 0
    assert recipes["new"]["collect_usd"] > 0 and recipes["old"]["collect_usd"] == 0
    # the collect asked only about training questions (up to RECIPE_PER_GROUP per topic: all of them here), once per model
    new_run = json.loads((Path(recipes["new"]["run_dir"]) / "run.json").read_text())
    splits = new_run["splits"]
    matrix = json.loads((keep / "new-matrix.json").read_text())
    read = set(splits["train"])
    assert splits["test"] and {t["id"] for t in matrix["tasks"]} == read
    assert recipes["new"]["points"][0]["usd"] == pytest.approx(recipes["new"]["collect_usd"])  # gen 0: the collect
    # the val questions have no row: validation scored them by their topic's mean
    assert new_run["warm_start"]["n_val"] == len(splits["val"]) > 0 and "n_with_rows" not in new_run["warm_start"]
    assert recipes["new"]["collect_questions"] == len(read)
    # once per model, then (`--collect-max-k 3`) the two best models of a topic whose labels were
    # close again, up to 3 answers a question
    from trinity.benchmarks.practice import practice_questions
    from trinity.data.questions import question_group

    group_of = {q.id: question_group(q) for q in practice_questions()}
    again = recipes["new"]["collect_asked_again"]
    assert out["collect_max_k"] == 3 and again and all(2 <= upto <= 3 for _, upto in again.values())
    extra = sum(2 * (upto - 1) * sum(group_of[i] == g for i in read) for g, (_, upto) in again.items())
    assert recipes["new"]["collect_calls"] == len(read) * len(recipes["new"]["server_by_model"]) + extra
    cells = [len(v) for t in matrix["tasks"] for v in t["per_model"].values()]
    assert sum(cells) == recipes["new"]["collect_calls"] and matrix["k"] == 1
    # a cached evaluation of the test split says the matrix stops at val (a live one reads no matrix)
    from trinity.analysis.evaluate import cached_run_outcomes
    from trinity.errors import InputError

    with pytest.raises(InputError, match="use --mode live"):
        cached_run_outcomes(recipes["new"]["run_dir"], "test")
    s = out["summary"]
    assert s["old_final_acc"] == recipes["old"]["points"][-1]["acc"]
    assert 0 < s["per_topic_ceiling"] <= 1 and s["best_single"].startswith("standin/")
    assert s["usd_to_old_final"]["old"] is not None  # the old recipe reaches its own final accuracy
    for key in ("ci_new_minus_old", "ci_new_minus_best_single"):
        assert s[key]["lo"] <= s[key]["point"] <= s[key]["hi"]
    # each recipe's held-out routes scored by the stand-in's own chances, paired with the best single
    for name in ("old", "new"):
        e = s["expected_routes"][name]
        assert 0 <= e["test_expected_acc"] <= e["test_expected_ceiling"] <= 1
        assert e["test_expected_share_of_ceiling"] == pytest.approx(
            e["test_expected_acc"] / e["test_expected_ceiling"], abs=1e-3
        )
        c = e["test_ci_vs_best_single"]
        assert c["lo"] <= c["point"] <= c["hi"]
        assert c["point"] == pytest.approx(e["test_expected_acc"] - e["test_best_single"]["expected_acc"], abs=1e-3)
        assert sum(sum(r.values()) for r in e["test_routes"].values()) == len(splits["test"])
    # the text output of the same result names both recipes and the collect
    print_text(out)
    text = capsys.readouterr().out
    assert "old recipe: final acc" in text and "new recipe: final acc" in text
    calls = recipes["new"]["collect_calls"]
    assert f"({calls} calls, k 1, {len(read)} questions: {RECIPE_PER_GROUP} train per topic)" in text
    for g, (pair, upto) in again.items():
        assert f"asked again: {g} ({pair[0]} and {pair[1]} close), up to {upto} answers a question" in text
    assert "new $ to it / old recipe's total $:" in text
    assert "new recipe's held-out routes in expectation (turn 1):" in text
    run_json = json.loads((Path(recipes["old"]["run_dir"]) / "run.json").read_text())
    assert run_json["config"]["live_recipe"] == "plain"
    run_json = json.loads((Path(recipes["new"]["run_dir"]) / "run.json").read_text())
    assert run_json["config"]["live_recipe"] == "race" and run_json["config"]["warm_start"] == "auto"
    assert run_json["warm_start"]["method"] == "labels"
    # the recipe's defaults: the collected matrix's labels, fitted to each topic's best model
    assert run_json["config"]["label_targets"] == run_json["warm_start"]["label_targets"] == DEFAULT_LABEL_TARGETS
    assert DEFAULT_LABEL_TARGETS == "best"


async def test_train_shows_accuracy_against_dollars_for_the_live_runs(bench):
    """Run after the bench: its run directories are two live runs, one without validation
    (the graded training sessions are the curve) and one validated on the collected matrix."""
    from minertui.accuracy import acc_cost
    from minertui.app import MinerApp
    from minertui.reader import Reader

    _, keep = bench
    out = json.loads((keep / "out.json").read_text())
    for name, source in (("old", "training"), ("new", "validation")):
        path = Path(out["recipes"][name]["run_dir"]).resolve()
        s = Reader(path.parent).model(path)
        s.poll()
        d = acc_cost(s.snapshot())
        assert d.source == source and len(d) == 2 and d.spend[-1] > 0 and d.spend[0] <= d.spend[-1]
    old = Path(out["recipes"]["old"]["run_dir"]).resolve()
    app = MinerApp(runs_root=old.parent, open_run=old, start_mode="train", poll=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.refresh_now()
        await pilot.press("a")
        await app.refresh_now()
        await pilot.pause()
        assert app.screen.query_one("#train-acc-cost").display
        legend = str(app.screen.query_one("#train-legend").render())
        assert "run-old" in legend and "no validated generation yet" not in legend and "$0 spent" not in legend


def test_live_routes_sweeps_the_per_group_count_on_the_kept_run(bench, capsys):
    """`python -m trinity.perf.live_routes RUN --per-group-sweep N,...` on the bench's new run:
    one line per N, the refit on its own collect (N 1: every train row here) free of calls."""
    from trinity.perf import live_routes

    _, keep = bench
    capsys.readouterr()
    assert live_routes.main([str(keep / "run-new"), "--per-group-sweep", "1"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["theta"] for r in lines] == ["chosen", "group"] and lines[1]["per_group"] == 1
    assert all(0 <= r["test_expected_acc"] <= r["test_expected_ceiling"] <= 1 for r in lines)
    with pytest.raises(SystemExit) as e:
        live_routes.main([str(keep / "run-new"), "--per-group-sweep", "a,b"])
    assert e.value.code == 2 and "comma-separated counts" in capsys.readouterr().err


def test_seeds_pool_into_one_set_of_held_out_figures(bench, tmp_path, capsys):
    from trinity.perf.learning_pooled import main, pooled

    args, keep = bench
    out = json.loads((keep / "out.json").read_text())
    pq = out["summary"]["per_question"]
    n = len(pq["ids"])
    assert n == len(pq["new"]) == len(pq["old"]) == len(pq["best_single"]) == len(pq["new_first_role"])
    assert set(pq["singles"]) == set(out["pool"]) and all(len(v) == n for v in pq["singles"].values())
    assert out["summary"]["expected_routes"]["new"]["test_per_question"]["ids"] == pq["ids"]
    # a second "seed": the same result with every held-out answer of the new recipe right
    other = json.loads(json.dumps(out))
    other["seed"] = 7
    other["summary"]["per_question"]["new"] = [1.0] * n
    p = pooled([out, other])
    assert p["questions"] == 2 * n and p["seeds"] == [out["seed"], 7]
    m = p["measured"]
    assert m["new"] == pytest.approx((sum(pq["new"]) + n) / (2 * n))
    assert m["best_single"] == pytest.approx(sum(pq["best_single"]) / n)
    ci = m["ci_new_minus_best_single"]
    assert ci["point"] == pytest.approx(m["new"] - m["best_single"])
    assert ci["lo"] <= ci["point"] <= ci["hi"]
    assert "in 2 strata" in ci["method"]
    assert p["expected"]["new"] == pytest.approx(
        out["summary"]["expected_routes"]["new"]["test_expected_acc"], abs=1e-3
    )
    # the pooled $ ratio: the seeds' $ added up (each seed's new $ to its old final over old totals)
    s = out["summary"]
    u = p["usd_ratio_new_over_old_total"]
    if s["usd_to_old_final"]["new"] is not None:
        assert u["pooled"] == pytest.approx(s["usd_to_old_final"]["new"] / s["total_usd"]["old"])
    else:
        assert u["pooled"] is None
    files = []
    for k, d in enumerate((out, other)):
        files.append(tmp_path / f"s{k}.json")
        files[-1].write_text(json.dumps(d))
    assert main([str(f) for f in files]) == 0
    text = capsys.readouterr().out
    assert "pooled, measured:" in text and "pooled, in expectation:" in text and f"{2 * n} held-out questions" in text
    old = tmp_path / "old.json"  # a result written before per-question figures: one line, exit 2
    old.write_text(json.dumps({"summary": {"n_test": 3}}))
    assert main([str(old)]) == 2
    assert "no per-question figures" in capsys.readouterr().err
