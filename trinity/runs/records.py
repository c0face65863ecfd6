"""The run directory's files as typed records: the one definition of what each file holds.

Every file a run directory holds (docs/CONTRACTS.md, "Run directory") has a frozen pydantic
model here, and readers go through `read_*` / `parse_*` below, never through string keys of a
raw dict:

| file                       | model                                                          |
|----------------------------|----------------------------------------------------------------|
| run.json                   | `RunMeta` (its `config`: `RunConfig`; its `warm_start`: `WarmStart`) |
| events.jsonl               | `Event` = `GenerationEvent` / `WarmStartEvent` / `ProgressEvent` / `StatusEvent` / `LogEvent` |
| history.json               | `list[GenerationRecord]` (a `generation` event without type/time; mode "m1": `list[M1EpochRecord]`) |
| traces.jsonl               | `TraceRecord` (its turns `TraceTurn`)                           |
| summary.json               | `Summary` (a Milestone-1 run, mode "m1": `M1Summary`; `warm_start`: `WarmStart`) |
| checkpoint/manifest.json   | `CheckpointManifest`                                            |
| eval.json                  | `EvalFile` (its entries `EvalEntry`)                            |
| best_theta.npy, bundles    | the θ file names and layout constants (`trinity.layout`)        |

The ledger and journal records are typed where they are written (`trinity.pool.ledger`,
`trinity.pool.journal`) and read there too: `read_ledger` (`LedgerLine`) and `read_journal`
(`JournalEntry`). A `generation` event's system sample is `SystemSample` (its GPUs `GpuReading`).

**Versions.** run.json carries `format` (`RUN_FORMAT`); it versions every file of the run
directory (events, history, traces, summary). A run.json without it is a format-1 run (every run
written before the field existed). eval.json carries its own `format` (`EVAL_FORMAT`), the
checkpoint manifest its `trinity-checkpoint/N` string. A record of a newer format than this
code reads is one line naming the file and asking for a newer trinity.

**Errors.** A record that does not fit its model is a `RecordError` (an `InputError`): one line
naming the file, the field and what is wrong.

**Extra fields.** The records that several parts of the engine add fields to — run.json and its
config, the warm start, the generation record (events and history.json), the warm-start event, summary.json, traces and an
eval.json entry — accept fields this module does not name (`extra="allow"`): the named fields are
the contract every reader may rely on, and a writer may add one without breaking older readers.
The closed records (progress / status / log events, the checkpoint manifest, eval.json's envelope)
refuse unknown fields. When the set of writers settles, the open records can be closed one by one.

This module is below everything that writes or reads a run directory (layer `trinity.runs`), so
it imports only pydantic, `trinity.errors`, `trinity.io` and `trinity.layout`.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from trinity.errors import InputError
from trinity.io import read_json
from trinity.layout import (  # the θ file names and layout, re-exported for the run directory's readers
    HEAD_FILE as HEAD_FILE,
)
from trinity.layout import (
    N_ROLES as N_ROLES,
)
from trinity.layout import (
    N_SVF_MATRICES as N_SVF_MATRICES,
)
from trinity.layout import (
    RECEIPT_FILE as RECEIPT_FILE,
)
from trinity.layout import (
    SVF_FILE as SVF_FILE,
)
from trinity.layout import (
    SVF_MATRICES as SVF_MATRICES,
)
from trinity.layout import (
    THETA_FILE as THETA_FILE,
)

# ---- versions --------------------------------------------------------------------------------
RUN_FORMAT = 1  # run.json `format`: versions run.json, events, history, traces and summary.json
EVAL_FORMAT = 1  # eval.json `format`
CHECKPOINT_FORMAT = "trinity-checkpoint/2"  # checkpoint/manifest.json `format`

# ---- file names of a run directory -----------------------------------------------------------
RUN_JSON = "run.json"
EVENTS_FILE = "events.jsonl"
TRACES_FILE = "traces.jsonl"
HISTORY_FILE = "history.json"
SUMMARY_FILE = "summary.json"
EVAL_FILE = "eval.json"
CHECKPOINT_DIR = "checkpoint"
CHECKPOINT_MANIFEST = "manifest.json"

RUN_STATUSES = ("created", "running", "finished", "stopped", "failed")


class RecordError(InputError):
    """A run-directory file that does not fit its record: one line naming the file and field."""


_R = TypeVar("_R", bound=BaseModel)


# ---- bases -----------------------------------------------------------------------------------
class _Record(BaseModel):
    """A closed record: unknown fields are errors."""

    # defer_build: a model's validator is built on its first use, not at import (the app's first
    # frame imports this module; a run's records are first read in the poller's thread)
    model_config = ConfigDict(frozen=True, strict=True, extra="forbid", populate_by_name=True, defer_build=True)

    # the order its fields were given in (read from a file, or passed by a writer): `to_json`
    # writes them in that order, so a file read and written again keeps its bytes, and a writer
    # decides the order of the lines it writes (not this module's declaration order)
    _order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _keep_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        record = handler(data)
        if isinstance(data, dict) and isinstance(record, _Record):
            record._order = tuple(data)
        return record

    @model_serializer(mode="wrap")
    def _ordered(self, handler: SerializerFunctionWrapHandler) -> Any:
        d = handler(self)
        if not self._order or not isinstance(d, dict):
            return d
        out = {k: d.pop(k) for k in self._order if k in d}
        out.update(d)
        return out

    def to_json(self) -> dict[str, Any]:
        """The record as the JSON object it was read from or built with: the fields given, in
        the order given (extra fields included), none of the defaults it was not given."""
        out: dict[str, Any] = self.model_dump(mode="json", exclude_unset=True, by_alias=True)
        return out

    @classmethod
    def given(cls: type[_R], **fields: Any) -> _R:
        """The record built from the fields that are not None (a field left out is not written)."""
        return cls(**{k: v for k, v in fields.items() if v is not None})


class _OpenRecord(_Record):
    """An open record: fields not named here are kept (see the module doc, "Extra fields")."""

    model_config = ConfigDict(frozen=True, strict=True, extra="allow", populate_by_name=True, defer_build=True)

    def extra(self, name: str) -> Any:
        """A field this model does not name (None when absent)."""
        return (self.model_extra or {}).get(name)


Num = float  # strict float accepts JSON integers too (never booleans or strings)


def _first_problem(e: ValidationError) -> str:
    err = e.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
    msg = err["msg"]
    if err["type"] in ("missing",):
        return f"field {loc} is missing"
    if err["type"] == "extra_forbidden":
        return f"field {loc} is not part of this record"
    return f"field {loc}: {msg}"


def _validate(model: type[_R], data: Any, where: str, hint: str) -> _R:
    if not isinstance(data, dict):
        raise RecordError(f"{where} is not a JSON object; {hint}")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        more = f" (+{e.error_count() - 1} more)" if e.error_count() > 1 else ""
        raise RecordError(f"{where}: {_first_problem(e)}{more}; {hint}") from None


def _check_format(found: Any, supported: int, where: str) -> None:
    if isinstance(found, bool) or not isinstance(found, int) or found < 1:
        raise RecordError(
            f"{where}: field format must be a positive integer, got {found!r}; it was not written by trinity"
        )
    if found > supported:
        raise RecordError(
            f"{where} is format {found}, written by a newer trinity (this one reads up to format {supported}); "
            "upgrade trinity (pip install -U) to read it"
        )


# ---- run.json --------------------------------------------------------------------------------
class SplitFractions(_OpenRecord):
    """run.json `config.splits`: the shares of the questions in each split."""

    train: Num | None = None
    val: Num | None = None
    test: Num | None = None
    audit: Num | None = None  # None: a run made before the audit split existed


class RunConfig(_OpenRecord):
    """run.json `config`: the engine's resolved `trinity.config.TrainConfig` as the run recorded it.

    A frozen record of it rather than the model itself: `trinity.config` is a sibling of this
    layer (this module cannot import it), a run made before a key existed has no value for it
    (`TrainConfig` would fill in today's default, not the value that reproduces the run:
    `trinity.config.LEGACY_VALUES`), a key an engine dropped must not make an old run unreadable,
    and a Milestone-1 run (mode "m1") records its own config here (`trinity.m1.run.TrainConfig`:
    its keys beside the shared ones are extra fields). So every field is `TrainConfig`'s, with
    its JSON type and None where the run did not record it; where a run is resumed or served the
    engine validates `to_json()` with `trinity.config.validate_config` (strict, the legacy values
    given). tests/runs/test_records.py keeps the field names in step with `TrainConfig`."""

    mode: str | None = None  # cached | live (TrainConfig's mode, not run.json's)
    encoder: str | None = None
    encoder_seed: int | None = None
    questions: str | None = None  # a path (absolute) or "practice"
    matrix: str | None = None
    practice_config: str | None = None
    benchmarks: list[str] | None = None
    pool: str | None = None
    competition: str | None = None
    protocol: str | None = None
    objective: str | None = None
    base_url: str | None = None
    models_yaml: str | None = None
    pool_models: list[str] | None = None
    cache_path: str | None = None
    popsize: int | None = None
    generations: int | None = None
    patience: int | None = None
    m: int | None = None
    sigma0: Num | None = None
    es_mirrors: Num | None = None
    seed: int | None = None
    split_seed: int | None = None
    budget_usd: Num | None = None
    prices: dict[str, Any] | None = None  # {MODEL: {price_in, price_out}}, as TrainConfig holds it
    price_in: Num | None = None
    price_out: Num | None = None
    read_timeout_s: Num | None = None
    fail_threshold: Num | None = None
    policy: str | None = None
    temperature: Num | None = None
    max_batch_tokens: int | None = None
    device: str | None = None
    dtype: str | None = None
    splits: SplitFractions | None = None
    val_every: int | None = None
    max_turns: int | None = None
    concurrency: int | None = None
    shaping: bool | None = None
    format_bonus: Num | None = None
    turn_penalty: Num | None = None
    workers: int | None = None
    ray_address: str | None = None
    warm_start: str | None = None  # auto | labels | none (what to fit; run.json `warm_start` is what was)
    label_targets: str | None = None  # group | question | best
    live_recipe: str | None = None
    live_schedule: str | None = None
    lambda_turns: Num | None = None
    lambda_cost: Num | None = None
    stratify: bool | None = None
    select_on: str | None = None
    traces: str | None = None


class WarmStart(_OpenRecord):
    """What the warm start fitted (run.json's and summary.json's `warm_start`; the `warm_start`
    event adds type, time and gen). `{"method": "none"}` when the run started cold."""

    method: str  # labels | roles | none
    fitted: str | None = None
    n_train: int | None = None
    lambda_: Num | None = Field(default=None, alias="lambda")  # the L2 strength the fit chose
    cv_routed_acc: dict[str, Num] | None = None  # routed accuracy per L2 strength tried
    train_acc: Num | None = None
    val_acc: Num | None = None
    n_val: int | None = None
    val_per_benchmark: dict[str, Num] | None = None
    role_train_acc: Num | None = None
    secs: Num | None = None
    label_targets: str | None = None  # labels: group | question | best (None: written before the choice existed)
    # labels from a matrix without a row for every training question (a per-group collect): how
    # many had rows and how many were fitted to their group's mean; left out when all had rows
    n_with_rows: int | None = None
    n_group_mean: int | None = None


class RunMeta(_OpenRecord):
    """run.json: the run's identity, state and inputs (the engine writes it atomically)."""

    format: int = 1
    id: str
    created: str | None = None
    updated: str | None = None
    status: Literal["created", "running", "finished", "stopped", "failed"] = "created"
    status_message: str = ""
    mode: str | None = None  # cached | live
    competition: str | None = None
    protocol: str | None = None  # the run's protocol (None: open)
    objective: str | None = None  # what its fitness optimises (None: reward)
    config: RunConfig = Field(default_factory=RunConfig)
    config_hash: str | None = None
    models: list[str] = Field(default_factory=list)  # pool model ids in θ order
    pool: str | None = None
    benchmarks: list[str] = Field(default_factory=list)
    encoder: str | None = None
    n_params: int | None = None
    splits: dict[str, list[str]] = Field(default_factory=dict)
    inputs_digest: str | None = None
    git_sha: str | None = None
    versions: dict[str, Any] = Field(default_factory=dict)
    pid: int | None = None
    budget_usd: Num | None = None
    argv: list[str] = Field(default_factory=list)
    torch_threads: int | None = None
    warm_start: WarmStart | None = None
    hidden: int | None = None  # the encoder's width, when the writer records it


# ---- generation records (events.jsonl `generation`, history.json rows) ------------------------
class GenerationRecord(_OpenRecord):
    """One ES generation, as history.json holds it (the `generation` event adds type and time)."""

    gen: int
    best: Num  # best so far
    mean: Num
    max: Num
    min: Num | None = None
    sigma: Num | None = None  # the ES step size (None: a run without one, a Milestone 1 epoch)
    evals: int  # cumulative candidate × question evaluations
    cost_usd: Num = 0.0
    calls: int = 0
    secs: Num | None = None
    val_acc: Num | None = None  # the generation's best candidate on val, when validation ran
    val_acc_mean: Num | None = None
    best_val_acc: Num | None = None
    model_mix: dict[str, int] | None = None  # turn-1 choices per model
    role_mix: dict[str, int] | None = None
    fitness_per_benchmark: dict[str, Num] | None = None
    val_per_benchmark: dict[str, Num] | None = None
    val_benchmark_mean: Num | None = None
    # live mode
    avg_turns: Num | None = None
    best_avg_turns: Num | None = None
    accuracy: Num | None = None
    cost_per_correct: Num | None = None


EVENT_ONLY_FIELDS = ("type", "time", "system")  # in the event, never in history.json

JsonNumber = int | float  # a number kept as written: an integer stays one (the line's bytes do not change)


class GpuReading(_OpenRecord):
    """One GPU in a system sample (`trinity.runs.system`); a figure NVML could not give is None."""

    index: int | None = None
    name: str | None = None
    util: JsonNumber | None = None  # %
    mem_used: JsonNumber | None = None  # bytes
    mem_total: JsonNumber | None = None
    temp: JsonNumber | None = None  # °C
    power_w: JsonNumber | None = None


class SystemSample(_OpenRecord):
    """The box's state (`trinity.runs.system.SystemSampler.sample`), as a `generation` event
    records it under "system": the GPUs, CPU %, memory and free disk (bytes); None: unknown."""

    time: JsonNumber | None = None
    gpus: list[GpuReading] = Field(default_factory=list)
    gpu_note: str | None = None  # why there is no GPU list ("no GPU: …")
    cpu: JsonNumber | None = None
    ram_used: JsonNumber | None = None
    ram_total: JsonNumber | None = None
    rss: JsonNumber | None = None  # the engine process's resident memory
    disk_free: JsonNumber | None = None

    @property
    def gpu_util(self) -> float | None:
        """Mean utilisation % over the GPUs that report it (None: no GPU reading)."""
        utils = [g.util for g in self.gpus if g.util is not None]
        return float(sum(utils) / len(utils)) if utils else None


class GenerationEvent(GenerationRecord):
    type: Literal["generation"]
    time: Num
    # the box's state beside the generation (GPU, CPU, memory, disk) when the engine samples it:
    # events only, never the checkpointed history (a resumed run stays bit-identical)
    system: SystemSample | None = None

    def record(self) -> GenerationRecord:
        """The history.json row of this event (without the event-only fields)."""
        d = {k: v for k, v in self.to_json().items() if k not in EVENT_ONLY_FIELDS}
        return GenerationRecord.model_validate(d)


class WarmStartEvent(WarmStart):
    """Generation 0: what the warm start fitted (`WarmStart`, as run.json and summary.json hold it)."""

    type: Literal["warm_start"]
    time: Num
    gen: int = 0


class ProgressEvent(_Record):
    type: Literal["progress"]
    time: Num
    gen: int
    done: int  # candidate × question evaluations within the generation
    total: int


class StatusEvent(_Record):
    type: Literal["status"]
    time: Num
    status: Literal["created", "running", "finished", "stopped", "failed"]
    message: str = ""


class LogEvent(_Record):
    type: Literal["log"]
    time: Num
    level: str = "info"  # info | warning | error
    message: str = ""


Event = GenerationEvent | WarmStartEvent | ProgressEvent | StatusEvent | LogEvent
_EVENT_MODELS: dict[str, type[Event]] = {
    "generation": GenerationEvent,
    "warm_start": WarmStartEvent,
    "progress": ProgressEvent,
    "status": StatusEvent,
    "log": LogEvent,
}
EVENT_TYPES = tuple(_EVENT_MODELS)


@functools.cache
def _history_adapter() -> TypeAdapter[list[GenerationRecord]]:
    return TypeAdapter(list[GenerationRecord])


# ---- traces.jsonl ----------------------------------------------------------------------------
class TraceTurn(_OpenRecord):
    model: str
    role: str
    model_probs: list[Num] | None = None
    role_probs: list[Num] | None = None
    output: str = ""
    verdict: Any = None
    cost_usd: Num = 0.0
    cache_hit: bool = False


class TraceRecord(_OpenRecord):
    """One routing trajectory (cached: one turn scored from the matrix, no call)."""

    gen: int | None = None
    candidate: int | None = None
    qid: str
    benchmark: str
    kind: str | None = None
    mode: str | None = None
    turns: list[TraceTurn] = Field(default_factory=list)
    answer: Any = None
    gold: Any = None
    correct: bool | None = None
    reward: Num | None = None
    cost_usd: Num = 0.0
    time: Num | None = None


# ---- summary.json ----------------------------------------------------------------------------
class BestTheta(_OpenRecord):
    which: str | None = None
    gen: int | None = None
    val_acc: Num | None = None
    rule: str | None = None


class StoppedEarly(_Record):
    """summary.json's `stopped_early`: the run ended before `generations_planned` because its
    chosen θ (generation `best_gen`) stood unbeaten for `patience` generations."""

    at_gen: int
    best_gen: int
    patience: int


class Summary(_OpenRecord):
    """summary.json: the run's outcome, rewritten after every generation and at the end."""

    run_id: str
    mode: str | None = None
    encoder: str | None = None
    models: list[str] = Field(default_factory=list)
    n_params: int
    generations: int
    generations_planned: int | None = None
    popsize: int | None = None
    m: int | None = None
    sigma0: Num | None = None
    seed: int | None = None
    final_sigma: Num | None = None
    best_fitness: Num | None = None
    final_mean_fitness: Num | None = None
    best_theta: BestTheta | None = None
    evals: int | None = None
    cost_usd: Num = 0.0
    calls: int = 0
    config_hash: str | None = None
    held_out_accuracy: str | None = None  # how the held-out figures below were measured (prose)
    fitness_definition: str | None = None  # what the fitness is in this run's mode (prose)
    lambda_turns: Num | None = None
    lambda_cost: Num | None = None
    warm_start: WarmStart | None = None
    avg_turns: Num | None = None
    avg_turns_source: str | None = None
    val_acc: Num | None = None
    test_acc: Num | None = None
    audit_acc: Num | None = None
    ledger_head: str | None = None
    ledger_records: int | None = None
    excess_calls: int | None = None
    excess_billed_usd: Num | None = None
    hidden: int | None = None
    n_total: int | None = None
    # `patience`: the generation the run stopped at because the chosen θ stood unbeaten that long
    stopped_early: StoppedEarly | None = None


# ---- Milestone-1 runs (`trinity m1 train`: mode "m1") ---------------------------------------
class M1EpochRecord(_OpenRecord):
    """One epoch of a Milestone-1 fit, as its history.json holds it (the train_* / val_* metrics
    beside the named ones are the competition's score parts, kept as extra fields)."""

    epoch: int
    loss: Num
    train_composite: Num | None = None
    val_composite: Num | None = None


class M1Summary(_OpenRecord):
    """summary.json of a Milestone-1 run (its own shape: epochs of a head fit, not ES generations)."""

    mode: str
    competition: str
    m1_config: str
    pool: str
    epochs: int
    best_epoch: int
    best_val_composite: Num
    early_stopped: bool
    n_train: int
    n_val: int
    d_h: int
    n_params: int
    feature_seconds: Num
    features_cached: bool
    fit_seconds: Num
    status: Literal["created", "running", "finished", "stopped", "failed"]
    message: str


@functools.cache
def _m1_history_adapter() -> TypeAdapter[list[M1EpochRecord]]:
    return TypeAdapter(list[M1EpochRecord])


# ---- checkpoint/manifest.json ----------------------------------------------------------------
class CheckpointManifest(_Record):
    format: str  # CHECKPOINT_FORMAT, checked below
    run_id: str
    config_hash: str
    generation: int
    file: str
    sha256: str
    bytes: int | None = None
    ledger_head: str | None = None
    ledger_records: int | None = None
    time: str | None = None

    @field_validator("format")
    @classmethod
    def _this_format(cls, v: str) -> str:
        if v != CHECKPOINT_FORMAT:
            raise ValueError(f"{v!r} is not {CHECKPOINT_FORMAT}")
        return v


# ---- eval.json -------------------------------------------------------------------------------
class BenchmarkResult(_OpenRecord):
    accuracy: Num
    n: int
    avg_turns: Num = 1.0


class EvalEntry(_OpenRecord):
    """One `trinity eval` result, keyed `<mode>/<split>` in eval.json."""

    per_benchmark: dict[str, BenchmarkResult]  # what the score estimate reads
    split: str | None = None
    mode: str | None = None
    n_questions: int | None = None
    models: list[str] = Field(default_factory=list)
    router: dict[str, Any] | None = None
    samples: int = 1
    claim: str | None = None


class EvalFile(_Record):
    format: int = 1
    run: str
    evaluations: dict[str, EvalEntry] = Field(default_factory=dict)


# ---- reading ---------------------------------------------------------------------------------
def _load(path: Path, what: str) -> Any:
    return read_json(path, what)


def parse_run_meta(data: Any, where: str = RUN_JSON) -> RunMeta:
    if isinstance(data, dict) and "format" in data:
        _check_format(data["format"], RUN_FORMAT, where)
    return _validate(
        RunMeta, data, where, "it was not written by this trinity; restore the run directory or start a new run"
    )


def read_run_meta(run_dir: str | os.PathLike[str]) -> RunMeta:
    """run.json of `run_dir`; InputError when it is missing, not JSON, or not a run.json."""
    path = Path(run_dir) / RUN_JSON
    if not path.exists():
        raise InputError(f"{Path(run_dir)} is not a run directory (no {RUN_JSON})")
    return parse_run_meta(_load(path, RUN_JSON), str(path))


def parse_event(data: Any, where: str = EVENTS_FILE) -> Event:
    """One events.jsonl line → its typed event; RecordError naming the field otherwise."""
    if not isinstance(data, dict):
        raise RecordError(f"{where}: an event is not a JSON object")
    kind = data.get("type")
    if kind not in EVENT_TYPES:
        raise RecordError(f"{where}: field type: unknown event type {kind!r} (known: {', '.join(EVENT_TYPES)})")
    try:
        return _EVENT_MODELS[kind].model_validate(data)
    except ValidationError as e:
        raise RecordError(f"{where}: {kind} event: {_first_problem(e)}") from None


def try_event(data: Any) -> Event | None:
    """`parse_event` for tolerant readers (the app's live tail): None for a line it cannot type
    (an event type from a newer engine, a line another tool wrote)."""
    try:
        return parse_event(data)
    except RecordError:
        return None


def parse_trace(data: Any, where: str = TRACES_FILE) -> TraceRecord:
    return _validate(TraceRecord, data, where, "the line was not written by trinity")


def try_trace(data: Any) -> TraceRecord | None:
    try:
        return parse_trace(data)
    except RecordError:
        return None


def parse_history(data: Any, where: str = HISTORY_FILE) -> list[GenerationRecord]:
    if not isinstance(data, list):
        raise RecordError(f"{where} is not a JSON list of generation records; it was not written by trinity")
    try:
        return _history_adapter().validate_python(data)
    except ValidationError as e:
        raise RecordError(
            f"{where}: record {_first_problem(e).removeprefix('field ')}; it was not written by trinity"
        ) from None


def read_history(path: str | os.PathLike[str]) -> list[GenerationRecord]:
    return parse_history(_load(Path(path), HISTORY_FILE), str(path))


def parse_summary(data: Any, where: str = SUMMARY_FILE) -> Summary:
    return _validate(Summary, data, where, "it was not written by trinity; rerun or resume the run to rewrite it")


def read_summary(path: str | os.PathLike[str]) -> Summary:
    return parse_summary(_load(Path(path), SUMMARY_FILE), str(path))


def parse_manifest(data: Any, where: str = CHECKPOINT_MANIFEST) -> CheckpointManifest:
    return _validate(CheckpointManifest, data, where, "start a new run or restore the run directory from a copy")


def parse_eval(data: Any, where: str = EVAL_FILE) -> EvalFile:
    if isinstance(data, dict) and "format" in data:
        _check_format(data["format"], EVAL_FORMAT, where)
    return _validate(EvalFile, data, where, "delete it and run trinity eval again")


def parse_eval_entry(data: Any, where: str = EVAL_FILE) -> EvalEntry:
    """One evaluation (a `trinity eval` report) as eval.json holds it."""
    return _validate(EvalEntry, data, where, "it was not written by trinity")


def read_eval_file(path: str | os.PathLike[str]) -> EvalFile:
    return parse_eval(_load(Path(path), EVAL_FILE), str(path))


def parse_m1_summary(data: Any, where: str = SUMMARY_FILE) -> M1Summary:
    return _validate(M1Summary, data, where, "it was not written by trinity m1; resume the run to rewrite it")


def read_m1_summary(path: str | os.PathLike[str]) -> M1Summary:
    return parse_m1_summary(_load(Path(path), SUMMARY_FILE), str(path))


def parse_m1_history(data: Any, where: str = HISTORY_FILE) -> list[M1EpochRecord]:
    if not isinstance(data, list):
        raise RecordError(f"{where} is not a JSON list of epoch records; it was not written by trinity m1")
    try:
        return _m1_history_adapter().validate_python(data)
    except ValidationError as e:
        raise RecordError(
            f"{where}: record {_first_problem(e).removeprefix('field ')}; it was not written by trinity m1"
        ) from None
