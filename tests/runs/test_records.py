"""The run directory's typed records (`trinity.runs.records`): every file a real tiny run writes
reads back through its model, and a broken or newer record is one line naming the file and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trinity.errors import InputError
from trinity.io import read_jsonl
from trinity.runs import records as R

ROOT = Path(__file__).resolve().parents[2]


def _cached_cfg():
    from trinity.config import load_config

    return load_config(
        ROOT / "configs" / "practice.yaml",
        {"encoder": "tiny-qwen3", "generations": 2, "popsize": 4, "m": 4, "val_every": 1, "seed": 3},
    )


@pytest.fixture(scope="module")
def cached_run(tmp_path_factory) -> Path:
    """A real tiny cached run (2 generations on the practice matrix) plus its `trinity eval`."""
    from trinity.analysis.evaluate import evaluate_run
    from trinity.optim.engine import start_run

    run = tmp_path_factory.mktemp("rec") / "run"
    res = start_run(_cached_cfg(), run_dir=run)
    assert res.status == "finished", res.message
    evaluate_run(run, split="test", mode="cached", bootstrap=50)
    return run


@pytest.fixture(scope="module")
def live_run(tmp_path_factory) -> Path:
    """A real tiny live run against the practice server on loopback: live traces, ledger, turns."""
    from trinity.benchmarks.practice import practice_questions
    from trinity.config import load_config
    from trinity.optim.engine import start_run
    from trinity.practice.server import start_practice_server

    tmp = tmp_path_factory.mktemp("live")
    qf = tmp / "q.jsonl"
    qf.write_text("".join(json.dumps(q.to_json()) + "\n" for q in practice_questions() if q.kind != "code"))
    server = start_practice_server(port=0)
    try:
        cfg = load_config(
            None,
            {
                "mode": "live",
                "pool": "practice",
                "questions": str(qf),
                "encoder": "tiny-qwen3",
                "generations": 1,
                "popsize": 2,
                "m": 2,
                "max_turns": 2,
                "seed": 1,
                "warm_start": "none",
                "traces": "all",
                "base_url": server.base_url,
                "cache_path": str(tmp / "responses.sqlite"),
            },
        )
        res = start_run(cfg, run_dir=tmp / "run")
    finally:
        server.stop()
    assert res.status == "finished", res.message
    return tmp / "run"


def _every_file_reads_back(run: Path) -> dict[str, int]:
    meta = R.read_run_meta(run)
    assert meta.format == R.RUN_FORMAT and meta.id == run.name and meta.status == "finished"
    assert meta.models and meta.n_params and set(meta.splits) >= {"train", "val", "test"}
    events = [R.parse_event(e, str(run / R.EVENTS_FILE)) for e in read_jsonl(run / R.EVENTS_FILE)]
    kinds = {type(e).__name__ for e in events}
    gens = [e for e in events if isinstance(e, R.GenerationEvent)]
    history = R.read_history(run / R.HISTORY_FILE)
    # history.json holds exactly the generation events without type and time
    assert [g.record() for g in gens] == history and len(history) == meta.config.generations
    # the typed config is the engine's resolved TrainConfig: strict-validated, it is the same config
    from trinity.config import validate_config

    cfg = validate_config(meta.config.to_json())
    assert cfg.hash() == meta.config_hash and cfg.resolved() == meta.config.to_json()
    summary_ws = R.read_summary(run / R.SUMMARY_FILE).warm_start  # a cold start: in the summary only
    assert summary_ws is not None and summary_ws.method in ("labels", "roles", "none")
    assert meta.warm_start == (summary_ws if summary_ws.method != "none" else None)
    traces = [R.parse_trace(t) for t in read_jsonl(run / R.TRACES_FILE)]
    assert traces and all(t.turns for t in traces)
    summary = R.read_summary(run / R.SUMMARY_FILE)
    assert summary.run_id == meta.id and summary.generations == len(history) and summary.n_params == meta.n_params
    manifest = R.parse_manifest(json.loads((run / R.CHECKPOINT_DIR / R.CHECKPOINT_MANIFEST).read_text()))
    assert manifest.generation == len(history) and (run / R.CHECKPOINT_DIR / manifest.file).exists()
    assert (run / R.THETA_FILE).exists()
    # and back out: to_json gives the very object the writer wrote (no field lost or invented)
    assert meta.to_json() == json.loads((run / R.RUN_JSON).read_text())
    assert [h.to_json() for h in history] == json.loads((run / R.HISTORY_FILE).read_text())
    assert summary.to_json() == json.loads((run / R.SUMMARY_FILE).read_text())
    _same_bytes_again(run)
    return {"events": len(events), "kinds": len(kinds), "traces": len(traces)}


def _json_file(obj: object) -> bytes:  # as trinity.io.atomic_write_json writes it
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode()


def _json_lines(objs: list) -> bytes:  # as trinity.io.append_jsonl and the trainer's traces write them
    return "".join(json.dumps(o, ensure_ascii=False, allow_nan=False) + "\n" for o in objs).encode()


def _same_bytes_again(run: Path) -> None:
    """Every record file of a real run, read through its record and written back with its
    `to_json`, is the very bytes the engine wrote: field order, number types and the fields left
    out all survive (the writers write through the same records)."""
    raw = {p: (run / p).read_bytes() for p in (R.RUN_JSON, R.HISTORY_FILE, R.SUMMARY_FILE)}
    assert _json_file(R.read_run_meta(run).to_json()) == raw[R.RUN_JSON]
    assert _json_file([h.to_json() for h in R.read_history(run / R.HISTORY_FILE)]) == raw[R.HISTORY_FILE]
    assert _json_file(R.read_summary(run / R.SUMMARY_FILE).to_json()) == raw[R.SUMMARY_FILE]
    events = (run / R.EVENTS_FILE).read_bytes()
    assert _json_lines([R.parse_event(e).to_json() for e in read_jsonl(run / R.EVENTS_FILE)]) == events
    traces = (run / R.TRACES_FILE).read_bytes()
    assert _json_lines([R.parse_trace(t).to_json() for t in read_jsonl(run / R.TRACES_FILE)]) == traces
    mpath = run / R.CHECKPOINT_DIR / R.CHECKPOINT_MANIFEST
    assert _json_file(R.parse_manifest(json.loads(mpath.read_text())).to_json()) == mpath.read_bytes()
    if (run / R.EVAL_FILE).exists():
        assert _json_file(R.read_eval_file(run / R.EVAL_FILE).to_json()) == (run / R.EVAL_FILE).read_bytes()


def test_every_file_of_a_real_cached_run_reads_through_its_record(cached_run):
    got = _every_file_reads_back(cached_run)
    events = [R.parse_event(e) for e in read_jsonl(cached_run / R.EVENTS_FILE)]
    assert {e.type for e in events} == set(R.EVENT_TYPES)  # every event type, from a real run
    ev = R.read_eval_file(cached_run / R.EVAL_FILE)
    entry = ev.evaluations["cached/test"]
    assert ev.format == R.EVAL_FORMAT and ev.run == cached_run.name
    assert entry.mode == "cached" and entry.split == "test" and entry.n_questions > 0
    assert sum(b.n for b in entry.per_benchmark.values()) == entry.n_questions
    assert got["traces"] > 0


def test_every_file_of_a_real_live_run_reads_through_its_record(live_run):
    _every_file_reads_back(live_run)
    gen = next(R.parse_event(e) for e in read_jsonl(live_run / R.EVENTS_FILE) if e["type"] == "generation")
    assert isinstance(gen, R.GenerationEvent) and gen.avg_turns is not None and gen.calls > 0
    traces = [R.parse_trace(t) for t in read_jsonl(live_run / R.TRACES_FILE)]
    assert all(t.mode == "live" and t.correct in (True, False) for t in traces)
    assert any(turn.output for t in traces for turn in t.turns)  # real answers from the server


def test_records_are_frozen(cached_run):
    meta = R.read_run_meta(cached_run)
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="frozen"):
        meta.status = "failed"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"gen": "one"}, "field gen"),
        ({"best": True}, "field best"),
        ({"sigma": "wide"}, "field sigma"),
    ],
)
def test_a_broken_generation_event_is_one_line_naming_file_and_field(change, needle):
    ev = {"type": "generation", "time": 1.0, "gen": 1, "best": 0.5, "mean": 0.4, "max": 0.5, "sigma": 0.1, "evals": 8}
    assert R.parse_event(ev).gen == 1
    with pytest.raises(R.RecordError) as e:
        R.parse_event({**ev, **change}, "runs/x/events.jsonl")
    msg = str(e.value)
    assert "\n" not in msg and "runs/x/events.jsonl" in msg and needle in msg and "generation event" in msg
    assert R.try_event({**ev, **change}) is None


def test_an_unknown_event_type_is_named_and_skipped_by_tolerant_readers():
    with pytest.raises(R.RecordError, match="unknown event type 'bogus'"):
        R.parse_event({"type": "bogus", "time": 1.0})
    assert R.try_event({"type": "bogus", "time": 1.0}) is None


def test_closed_records_refuse_unknown_fields_open_ones_keep_them():
    with pytest.raises(R.RecordError, match="field extra_field is not part of this record"):
        R.parse_event({"type": "progress", "time": 1.0, "gen": 1, "done": 1, "total": 2, "extra_field": 1})
    # other parts of the engine add fields to the generation record and run.json: kept, not refused
    g = R.parse_event(
        {
            "type": "generation",
            "time": 1.0,
            "gen": 1,
            "best": 1,
            "mean": 0,
            "max": 1,
            "sigma": 0.1,
            "evals": 8,
            "new": 2,
        }
    )
    assert g.extra("new") == 2 and g.to_json()["new"] == 2 and g.best == 1.0
    meta = R.parse_run_meta({"id": "r", "status": "running", "protocol": "open", "added_later": [1]})
    assert meta.protocol == "open" and meta.extra("added_later") == [1]
    assert meta.format == 1  # no format: a run from before the field


def test_a_newer_run_or_eval_format_is_one_line_asking_for_a_newer_trinity(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"format": R.RUN_FORMAT + 1, "id": "r"}))
    with pytest.raises(InputError) as e:
        R.read_run_meta(tmp_path)
    assert "newer trinity" in str(e.value) and str(tmp_path / "run.json") in str(e.value) and "\n" not in str(e.value)
    (tmp_path / "eval.json").write_text(json.dumps({"format": 99, "run": "r", "evaluations": {}}))
    with pytest.raises(InputError, match="format 99, written by a newer trinity"):
        R.read_eval_file(tmp_path / "eval.json")
    with pytest.raises(InputError, match="field format must be a positive integer"):
        R.parse_run_meta({"format": "1", "id": "r"})


def test_an_older_format_is_one_line_too(tmp_path):
    with pytest.raises(R.RecordError) as e:
        R.parse_run_meta({"format": 0, "id": "r"}, "runs/r/run.json")
    assert "runs/r/run.json: field format must be a positive integer, got 0" in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(
        R.RecordError, match="field format: Value error, 'trinity-checkpoint/1' is not trinity-checkpoint/2"
    ):
        R.parse_manifest(
            {
                "format": "trinity-checkpoint/1",
                "run_id": "r",
                "config_hash": "h",
                "generation": 1,
                "file": "f",
                "sha256": "x",
            }
        )


def _every_record() -> list[tuple[object, object]]:
    """(record, parser) pairs: one of every record type the run directory holds."""
    gen = R.GenerationRecord.given(
        gen=2, best=0.5, mean=0.25, max=0.5, min=0.0, sigma=0.1, evals=16, cost_usd=0.0, calls=0,
        val_acc=0.75, val_acc_mean=0.5, best_val_acc=0.75, model_mix={"a": 3, "b": 1}, secs=0.5,
    )  # fmt: skip
    return [
        (
            R.RunMeta(
                format=R.RUN_FORMAT,
                id="r",
                created="2026-01-01T00:00:00+00:00",
                status="created",
                mode="cached",
                config={"seed": 3},
                models=["a", "b"],
                splits={"train": ["q1"], "val": [], "test": []},
                n_params=20,
                budget_usd=None,
            ),
            R.parse_run_meta,
        ),  # fmt: skip
        (gen, lambda d: R.parse_history([d])[0]),
        (R.GenerationEvent(type="generation", time=1.5, **gen.to_json(), system={"cpu": 3.0}), R.parse_event),
        (R.WarmStartEvent(type="warm_start", time=1.0, gen=0, method="labels", **{"lambda": 0.1}), R.parse_event),
        (R.ProgressEvent(type="progress", time=1.0, gen=1, done=2, total=8), R.parse_event),
        (R.StatusEvent(type="status", time=1.0, status="running", message=""), R.parse_event),
        (R.LogEvent(type="log", time=1.0, level="info", message="hello"), R.parse_event),
        (
            R.TraceRecord(
                gen=1,
                candidate=0,
                qid="q1",
                benchmark="b",
                mode="cached",
                reward=1.0,
                correct=True,
                turns=[R.TraceTurn(model="a", role="Worker", model_probs=[0.5, 0.5], output="4")],
            ),
            R.parse_trace,
        ),  # fmt: skip
        (
            R.Summary(
                run_id="r",
                mode="cached",
                models=["a", "b"],
                n_params=20,
                generations=2,
                best_fitness=None,
                best_theta=R.BestTheta(gen=2, which="es_mean", val_acc=None, rule="..."),
                val_acc=0.75,
                ledger_head=None,
                ledger_records=0,
            ),
            R.parse_summary,
        ),  # fmt: skip
        (
            R.CheckpointManifest(
                format=R.CHECKPOINT_FORMAT,
                run_id="r",
                config_hash="h",
                generation=2,
                file="state-000002.npz",
                sha256="0" * 64,
                bytes=10,
                ledger_head=None,
                ledger_records=0,
                time="2026-01-01T00:00:00+00:00",
            ),
            R.parse_manifest,
        ),  # fmt: skip
        (
            R.EvalFile(
                format=R.EVAL_FORMAT,
                run="r",
                evaluations={
                    "cached/test": R.EvalEntry(
                        per_benchmark={"b": R.BenchmarkResult(accuracy=0.5, n=4)}, split="test", mode="cached"
                    )
                },
            ),
            R.parse_eval,
        ),  # fmt: skip
        (
            R.M1Summary(
                mode="m1",
                competition="tinyrouter-m1",
                m1_config="5-domain",
                pool="penultimate",
                epochs=3,
                best_epoch=2,
                best_val_composite=0.8,
                early_stopped=False,
                n_train=48,
                n_val=12,
                d_h=64,
                n_params=704,
                feature_seconds=1.5,
                features_cached=True,
                fit_seconds=0.25,
                status="finished",
                message="best validation composite 0.8000 at epoch 2",
            ),
            R.parse_m1_summary,
        ),  # fmt: skip
        (
            R.M1EpochRecord(epoch=1, loss=2.5, train_composite=0.5, val_composite=0.4, **{"val_domain_acc": 0.5}),
            lambda d: R.parse_m1_history([d])[0],
        ),
    ]


@pytest.mark.parametrize("i", range(13))
def test_every_record_type_written_reads_back_the_same(i):
    record, parse = _every_record()[i]
    data = json.loads(json.dumps(record.to_json()))  # through the bytes a writer puts in the file
    back = parse(data)
    assert back == record and type(back) is type(record)
    assert json.dumps(back.to_json()) == json.dumps(record.to_json())  # the same bytes, field order included


def test_records_keep_the_writers_field_order_and_leave_out_what_was_not_given():
    r = R.GenerationRecord.given(secs=1.0, gen=1, best=0.5, mean=0.5, max=0.5, evals=4, val_acc=None)
    assert list(r.to_json()) == ["secs", "gen", "best", "mean", "max", "evals"]  # val_acc None: left out
    s = R.Summary(run_id="r", n_params=1, generations=0, best_fitness=None)
    assert s.to_json() == {"run_id": "r", "n_params": 1, "generations": 0, "best_fitness": None}  # given None: kept


def test_broken_files_are_one_line_each(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"run_id": "r", "n_params": "many", "generations": 1}))
    with pytest.raises(R.RecordError) as e:
        R.read_summary(tmp_path / "summary.json")
    assert "summary.json: field n_params" in str(e.value) and "\n" not in str(e.value)
    (tmp_path / "history.json").write_text(json.dumps([{"gen": 1}]))
    with pytest.raises(R.RecordError, match=r"history.json: record 0.best is missing"):
        R.read_history(tmp_path / "history.json")
    with pytest.raises(R.RecordError, match="is not a JSON object"):
        R.parse_manifest([1, 2], "checkpoint/manifest.json")
    with pytest.raises(R.RecordError, match="field format"):
        R.parse_manifest(
            {
                "format": "trinity-checkpoint/1",
                "run_id": "r",
                "config_hash": "h",
                "generation": 1,
                "file": "f",
                "sha256": "x",
            }
        )
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(InputError):
        R.read_run_meta(tmp_path)


def test_one_home_of_the_theta_layout():
    from trinity import layout
    from trinity.competition import text
    from trinity.model import svf, theta
    from trinity.submission import bundle

    assert R.HEAD_FILE is layout.HEAD_FILE and R.SVF_MATRICES is layout.SVF_MATRICES
    assert text.HEAD_ROWS_EXTRA == layout.N_ROLES and text.SVF_PARAMS == layout.N_SVF_MATRICES * text.HIDDEN
    assert text.theta_length(3) == 13_312  # (3 + 3) × 1024 + 7 × 1024: TinyRouter's gates

    assert theta.HEAD_FILE is R.HEAD_FILE and theta.SVF_FILE is R.SVF_FILE and theta.N_ROLES is R.N_ROLES
    assert bundle.HEAD_FILE is R.HEAD_FILE and bundle.THETA_FILE is R.THETA_FILE
    assert bundle.N_SVF_MATRICES == len(svf.SVF_MATRICES) == R.N_SVF_MATRICES
    assert svf.SVF_MATRICES is R.SVF_MATRICES


def test_the_pr_local_score_reads_the_real_eval_json(cached_run, tmp_path):
    from types import SimpleNamespace

    from trinity.submission.gitsubmit import _local_score

    ev = json.loads((cached_run / R.EVAL_FILE).read_text())
    point = ev["evaluations"]["cached/test"]["router"]["accuracy"]["point"]
    got = _local_score(SimpleNamespace(run_dir=str(cached_run)))  # type: ignore[arg-type]
    assert got == {"local_score": f"{point:.4f}", "local_score_settings": "trinity eval (eval.json, cached/test)"}
    assert _local_score(SimpleNamespace(run_dir=str(tmp_path))) == {}  # type: ignore[arg-type]  # none: not measured


# ---- run.json's config and warm start, typed ----------------------------------------------------
def test_run_config_names_every_train_config_field():
    """RunConfig is TrainConfig's record: a key added to (or dropped from) the engine's config is
    added to (or dropped from) the record, so a reader never falls back to string keys."""
    from trinity.config import TrainConfig

    assert set(R.RunConfig.model_fields) == set(TrainConfig.model_fields)
    from trinity.config import Splits

    assert set(R.SplitFractions.model_fields) == set(Splits.model_fields)


def test_the_typed_config_round_trips_through_train_config():
    from trinity.config import load_config, validate_config

    cfg = load_config(ROOT / "configs" / "practice.yaml", {"encoder": "tiny-qwen3", "budget_usd": 2.5})
    rc = R.RunConfig.model_validate(cfg.resolved())
    assert rc.encoder == "tiny-qwen3" and rc.budget_usd == 2.5 and rc.splits is not None and rc.splits.train == 0.6
    assert rc.to_json() == cfg.resolved()  # every key, in the engine's order
    assert list(rc.to_json()) == list(cfg.resolved())
    back = validate_config(rc.to_json())
    assert back == cfg and back.hash() == cfg.hash()
    meta = R.RunMeta(id="r", config=rc)
    again = R.parse_run_meta(json.loads(json.dumps(meta.to_json())))
    assert again.config == rc and again.to_json() == meta.to_json()
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="frozen"):  # frozen, as every record
        rc.popsize = 3  # type: ignore[misc]


def test_an_old_run_json_with_a_dict_config_still_reads(tmp_path):
    """A run.json written before `format`, protocols, the audit split and the typed records: its
    config lacks keys added since and holds one an older engine wrote; it reads, keys it lacks are
    None (not today's defaults), the unknown one is kept, and the bytes survive a rewrite."""
    old = {
        "id": "old-run",
        "created": "2025-06-01T10:00:00+00:00",
        "status": "finished",
        "mode": "cached",
        "config": {
            "mode": "cached",
            "encoder": "tiny-qwen3",
            "questions": "practice",
            "matrix": "practice",
            "popsize": 8,
            "generations": 3,
            "m": 4,
            "sigma0": 0.1,
            "seed": 0,
            "splits": {"train": 0.6, "val": 0.2, "test": 0.2},
            "budget_usd": None,
            "old_key": "kept",
        },
        "models": ["a", "b"],
        "warm_start": {"method": "labels", "lambda": 0.01, "train_acc": 0.5, "val_acc": 0.4, "n_val": 10},
    }
    raw = json.dumps(old, indent=2) + "\n"
    (tmp_path / "run.json").write_text(raw)
    meta = R.read_run_meta(tmp_path)
    assert meta.format == 1 and meta.config.generations == 3 and meta.config.popsize == 8
    assert meta.config.splits is not None and meta.config.splits.audit is None
    assert meta.config.warm_start is None and meta.config.protocol is None  # not recorded: not a default
    assert meta.config.extra("old_key") == "kept"
    assert meta.warm_start is not None and meta.warm_start.lambda_ == 0.01 and meta.warm_start.val_acc == 0.4
    assert _json_file(meta.to_json()).decode() == raw
    # the engine's resume gives such a run the values that reproduce it (LEGACY_VALUES), not defaults
    from trinity.config import LEGACY_VALUES, validate_config

    data = meta.config.to_json()
    data.pop("old_key")
    for k, v in LEGACY_VALUES.items():
        data.setdefault(k, v)
    assert validate_config(data).warm_start == "none"


def test_a_milestone_1_config_reads_with_its_own_keys_kept(tmp_path):
    from trinity.m1.run import MODE
    from trinity.m1.run import TrainConfig as M1Config

    conf = {**M1Config().__dict__, "generations": 30}
    meta = R.parse_run_meta({"id": "m", "mode": MODE, "pool": "offline", "config": conf})
    assert meta.config.generations == 30 and meta.config.extra("m1_config") == "5-domain"
    assert M1Config.of_run(meta, tmp_path) == M1Config()


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ({"popsize": "8"}, "field config.popsize: Input should be a valid integer"),
        ({"splits": {"train": "0.6"}}, "field config.splits.train: Input should be a valid number"),
        ("not a mapping", "field config: Input should be"),
    ],
)
def test_a_config_of_the_wrong_type_is_one_line_naming_the_field(config, needle):
    with pytest.raises(R.RecordError) as e:
        R.parse_run_meta({"id": "r", "config": config}, "runs/r/run.json")
    assert needle in str(e.value) and "runs/r/run.json" in str(e.value) and "\n" not in str(e.value)


def test_a_newer_run_json_is_the_version_line_whatever_its_config_holds(tmp_path):
    newer = {"format": R.RUN_FORMAT + 1, "id": "r", "config": {"popsize": {"a new": "shape"}}, "warm_start": 3}
    (tmp_path / "run.json").write_text(json.dumps(newer))
    with pytest.raises(R.RecordError) as e:
        R.read_run_meta(tmp_path)
    msg = str(e.value)
    assert "written by a newer trinity" in msg and "\n" not in msg and "popsize" not in msg


def test_a_warm_start_of_the_wrong_shape_is_named():
    with pytest.raises(R.RecordError, match="field warm_start.method is missing"):
        R.parse_run_meta({"id": "r", "warm_start": {"val_acc": 0.5}})
