"""The multi-turn Thinker / Worker / Verifier loop, run for many trajectories at once.

One turn step for every active trajectory:
  1. encode its transcript (all trajectories of the step in one batched router call),
  2. pick (model, role) — argmax per group by default,
  3. send the chat completions concurrently (the pool client bounds concurrency), with the
     messages and decoding of the run's session protocol (`trinity.competition.protocol`),
  4. post-process the output (strip, head + tail over 8000 characters) and append it; a
     Verifier's ACCEPT (the protocol's parser, on the raw output) ends the session by the
     protocol's stop rule (a Worker turn came before it).
So the wall time of a generation is ≈ turns × call latency, not trajectories × turns × latency.
The scored answer is the protocol's committed answer (ours: the newest non-Verifier turn that has
an extractable answer).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

import numpy as np

from trinity import grading
from trinity.benchmarks.prompts import pool_question, turn_messages
from trinity.competition.protocol import get_protocol
from trinity.competition.text import router_text
from trinity.data.kinds import WORKER_ANSWER_KINDS
from trinity.data.questions import Question
from trinity.grading import grade_question
from trinity.grading.code import extract_code
from trinity.model import ROLES, policy
from trinity.model.arrays import Float64Array, IndexArray
from trinity.session.pipeline import can_pipeline, run_turns_pipelined
from trinity.session.shards import LogitsFn
from trinity.session.transcript import Trajectory, Turn

if TYPE_CHECKING:
    from trinity.competition.protocol import SessionProtocol
    from trinity.grading.verdict import Verdict
    from trinity.pool.client import ChatResult

MAX_TURNS = 5
CODE_GRADING_SLOTS = 2  # sandboxed grading children at once (2 cores)


def extract_answer(kind: str, text: str) -> str | None:
    """The answer a grader would see in `text`, or None when there is none."""
    if not text or not text.strip():
        return None

    if kind == "math":
        return grading.extract_math_answer(text)
    if kind == "mc":
        return grading.extract_choice(text)
    if kind in ("exact", "ifeval", "funcall"):
        return grading.extract_answer(kind, text)

    code = extract_code(text)
    if not code or not code.strip():
        return None
    if "```" not in text:
        # No fenced block: the whole text is the candidate, which is only an answer if it is
        # Python at all (a Thinker's plan in prose is not).
        try:
            compile(code, "<answer>", "exec")
        except (SyntaxError, ValueError):
            return None
    return code


def grade_answer(question: Question, text: str) -> Verdict:
    return grade_question(question, text)


@dataclass
class SessionSpec:
    """What a batch of sessions needs besides the questions."""

    models: Sequence[str]  # pool model ids, in θ order
    purpose: str = "train"  # ledger purpose: train | eval | collect
    max_turns: int = MAX_TURNS
    policy: str = "argmax"  # or "sample"
    temperature: float = 1.0  # softmax temperature when policy == "sample"
    seed: int = 0
    key_prefix: str = ""  # journal key prefix, e.g. "g12" for generation 12
    competition: str | None = None  # whose router text the encoder reads (trinity.competition.text)
    protocol: str | None = None  # the session protocol the pool sees (trinity.competition.protocol; None: open)
    schedule: str = "barrier"  # or "pipelined": each session moves on alone (trinity.session.pipeline)
    batch_wait_s: float = 0.005  # pipelined: how long ready sessions wait to share an encoder batch
    crn: bool = False  # common random numbers: every candidate's sampling draws are the same


class ChatClient(Protocol):
    """What a session needs of its pool client: `trinity.pool.client.PoolClient.chat` (the
    serving engine wraps it with a per-key budget; tests script the replies)."""

    async def chat(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        purpose: str,
        journal_key: str | None = None,
        **decoding: Any,
    ) -> ChatResult: ...


Decision = tuple[IndexArray, IndexArray, Float64Array, Float64Array]  # model, role; their probabilities


def _stable_seed(*parts: object) -> int:
    """A seed that is the same in every process (Python's hash() of str is salted)."""
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:4], "big")


class SessionRunner:
    """Runs trajectories for (candidate, question) pairs against a pool client.

    `logits_fn(texts, candidate_of_text, stream_of_text) -> (N, n_models + 3)` wraps the router
    (`SessionEncoder.logits`: a turn reads only the tokens its transcript added; the stream id of a
    text is its trajectory's index, stable over the turns of this `run`); `client` is a
    `trinity.pool.client.PoolClient` (or anything with the same `chat`: `ChatClient`). `on_turn` is called after each turn step with the number of finished trajectories.
    """

    def __init__(
        self,
        client: ChatClient,
        logits_fn: LogitsFn,
        spec: SessionSpec,
        on_step: Callable[[int, int], None] | None = None,
    ) -> None:
        self.client = client
        self.logits_fn = logits_fn
        self.spec = spec
        self.on_step = on_step

        self.text = router_text(spec.competition)
        self.protocol = get_protocol(spec.protocol)
        self.pipeline_stats: dict[str, float] | None = None  # the pipelined schedule's counters

    def _decide(self, logits: np.ndarray, trajs: list[Trajectory], turn: int) -> Decision:
        """(model_idx, role_idx, model_probs, role_probs) per trajectory, by `trinity.model.policy`
        (the cached fitness's policy too). `sample` draws each trajectory's turn from its own
        RandomState seeded by (seed, key_prefix, candidate, question, turn), so a resumed run
        makes the same choices and its journal replays them. The probabilities shown in traces
        are at temperature 1."""
        n_models = len(self.spec.models)
        model_probs, role_probs = policy.group_probs(logits.astype(np.float64), n_models)
        if self.spec.policy == "sample":
            mi: list[int] = []
            ri: list[int] = []
            for k, tr in enumerate(trajs):
                rng = np.random.RandomState(
                    _stable_seed(
                        self.spec.seed, self.spec.key_prefix, "crn" if self.spec.crn else tr.candidate, tr.qid, turn
                    )
                )
                m, r = policy.sample(logits[k], n_models, rng, self.spec.temperature)
                mi.append(int(m))
                ri.append(int(r))
            return np.array(mi, dtype=np.intp), np.array(ri, dtype=np.intp), model_probs, role_probs
        model_idx, role_idx = policy.choose(logits, n_models)
        return model_idx, role_idx, model_probs, role_probs

    async def _one_turn(
        self,
        q: Question,
        query: str,
        traj: Trajectory,
        model: str,
        role: str,
        mprobs: np.ndarray,
        rprobs: np.ndarray,
        turn: int,
    ) -> None:
        proto = self.protocol
        messages = turn_messages(proto, role, q, traj.turns, query)
        key = f"{self.spec.key_prefix}/c{traj.candidate}/{q.id}/t{turn}/{model}/{role}"
        res = await self.client.chat(
            model, messages, purpose=self.spec.purpose, journal_key=key, **proto.decoding_kwargs(role)
        )
        t = Turn(
            model=model,
            role=role,
            model_probs=[round(float(x), 4) for x in mprobs],
            role_probs=[round(float(x), 4) for x in rprobs],
            output=proto.output_text(res.text or "") if res.ok else "",
            ok=res.ok,
            error=res.error,
            cost_usd=float(res.cost_usd or 0.0),
            cache_hit=bool(res.cache_hit),
            prompt_tokens=int(res.prompt_tokens or 0),
            completion_tokens=int(res.completion_tokens or 0),
        )
        traj.turns.append(t)
        if not res.ok:
            # A failed call (provider error body, retries exhausted): reward 0 for this session.
            traj.done, traj.failed, traj.reason = True, True, f"call failed: {res.error}"
            return
        if role == "Verifier":
            # read from the raw output (the verdict line may sit in a truncated middle)
            t.verdict = proto.parse_verdict(res.text or "")
            if proto.is_open:
                t.verdict = t.verdict or "REVISE"
            if proto.stops(traj.turns):
                traj.done = True

    async def run(self, pairs: Sequence[tuple[int, Question]]) -> list[Trajectory]:
        """Run one session per (candidate index, question); returns them in the same order."""
        trajs = [Trajectory(candidate=c, qid=q.id) for c, q in pairs]
        questions = [q for _, q in pairs]
        queries = [self.text.render_question(q) for q in questions]
        pool_queries = [pool_question(self.protocol, q) for q in questions]

        if self.spec.schedule == "pipelined" and can_pipeline(self.logits_fn):  # every session ends there
            self.pipeline_stats = await run_turns_pipelined(
                self, trajs, questions, queries, self.spec.batch_wait_s, pool_queries=pool_queries
            )
        for turn in range(1, self.spec.max_turns + 1):
            active = [i for i, t in enumerate(trajs) if not t.done]
            if not active:
                break
            texts = [self.text.encoder_input(queries[i], trajs[i].encoder_turns()) for i in active]
            cands = np.array([trajs[i].candidate for i in active], dtype=np.int64)
            logits = np.asarray(self.logits_fn(texts, cands, active))  # (A, n_models + 3)
            mi, ri, mp, rp = self._decide(logits, [trajs[i] for i in active], turn)
            # return_exceptions: when one call raises (402, budget), the calls already in flight
            # still finish and land in the journal and ledger before the run stops.
            results = await asyncio.gather(
                *(
                    self._one_turn(
                        questions[i],
                        pool_queries[i],
                        trajs[i],
                        self.spec.models[int(mi[k])],
                        ROLES[int(ri[k])],
                        mp[k],
                        rp[k],
                        turn,
                    )
                    for k, i in enumerate(active)
                ),
                return_exceptions=True,
            )
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:
                raise errors[0]
            if self.on_step:
                self.on_step(turn, sum(t.done for t in trajs))
        # Grading is deterministic, and candidates near each other often end on the very same
        # answer text: each distinct (question, answer text) is graded once.
        # Code answers are graded in sandboxed children, a few at a time off the event loop;
        # math / multiple choice grade fastest in this thread (math-verify's deadline needs it).
        to_grade: dict[tuple[str, str], tuple[Question, list[Trajectory]]] = {}
        for q, t in zip(questions, trajs):
            if self._pick_answer(q, t, self.protocol) and t.answer_text is not None:  # picked: the text is set
                to_grade.setdefault((q.id, t.answer_text), (q, []))[1].append(t)
        verdicts: dict[tuple[str, str], Verdict] = {}
        slots = asyncio.Semaphore(CODE_GRADING_SLOTS)

        async def grade_code(key: tuple[str, str], q: Question) -> None:
            async with slots:
                verdicts[key] = await asyncio.to_thread(grade_answer, q, key[1])

        await asyncio.gather(*(grade_code(key, q) for key, (q, _) in to_grade.items() if q.kind == "code"))
        for key, (q, group) in to_grade.items():
            v = verdicts[key] if q.kind == "code" else grade_answer(q, key[1])
            for t in group:
                t.correct, t.reason = bool(v.correct), v.reason
        return trajs

    @staticmethod
    def _pick_answer(q: Question, traj: Trajectory, protocol: SessionProtocol | None = None) -> bool:
        """Find the scored answer. Under a competition's protocol: its committed answer (the last
        Worker output when it has an extractable answer, else the newest Worker, then
        non-Verifier, turn that has one). Under ours: the newest non-Verifier turn with an
        extractable answer (for the free-form kinds, `WORKER_ANSWER_KINDS`, the newest Worker
        turn). Returns whether there is one to grade."""
        traj.done = True
        if traj.failed:
            traj.correct = False
            return False
        if protocol is not None and not protocol.is_open:
            turns = [t for t in traj.turns if t.ok]
            text = protocol.committed_answer(turns, lambda s: extract_answer(q.kind, s) is not None)
            ans = extract_answer(q.kind, text)
            if ans is not None:
                traj.answer_text, traj.answer = text, ans
                return True
            traj.correct, traj.reason = False, "no extractable answer in the committed answer"
            return False
        for t in reversed(traj.turns):
            if t.role == "Verifier" or not t.ok or (t.role == "Thinker" and q.kind in WORKER_ANSWER_KINDS):
                continue
            ans = extract_answer(q.kind, t.output)
            if ans is not None:
                traj.answer_text, traj.answer = t.output, ans
                return True
        traj.correct, traj.reason = False, "no extractable answer in any non-Verifier turn"
        return False


def trace_record(traj: Trajectory, q: Question, gen: int | None, mode: str = "live") -> dict[str, Any]:
    """The `traces.jsonl` line of one trajectory (docs/CONTRACTS.md)."""
    gold = q.answer if q.kind != "code" else None
    return {
        "gen": gen,
        "candidate": traj.candidate,
        "qid": q.id,
        "benchmark": q.benchmark,
        "kind": q.kind,
        "mode": mode,
        "turns": [t.to_trace() for t in traj.turns],
        "answer": traj.answer if q.kind != "code" else ("<code>" if traj.answer else None),
        "gold": gold,
        "correct": bool(traj.correct),
        "reward": 1.0 if traj.correct else 0.0,
        "reason": traj.reason,
        "cost_usd": round(traj.cost_usd, 8),
        "time": round(time.time(), 3),
    }
