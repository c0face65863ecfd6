"""`python -m minertui.jobs.playground --runs-root ROOT RUN_DIR [RUN_DIR …]` — the Playground's
router host, in a child process (a run's router imports torch; the app process must not).

It loads each run's router once, says what it has, then answers commands, one JSON object a line
on stdin, with JSON lines on stdout:

  → {"ready": {"runs": [{"name", "path", "models", "competition", "questions": [...]}]}}
  ← {"op": "route", "question": TEXT | "qid": ID, "kind": K, "turns": [[role, model, output], …]}
  → {"route": [{"run": i, "model_probs": {…}, "role_probs": {…}, "model": M, "role": R}, …]}
     (per run; free: the head on the transcript so far, nothing is sent to a pool)
  ← {"op": "live", "question" | "qid", "kind", "reference", "budget_usd"}
  → {"turn": {…}, "run": i} as each turn arrives, then {"session": {…}, "answer_text": …, "run": i}
     per run, one run after another; calls are reserved against `budget_usd` per run and recorded
     in ROOT/playground/ (ledger.jsonl, purpose playground; journal.jsonl), the response cache used
  ← {"op": "runs", "runs": [RUN_DIR, …]}
  → {"ready": …} as at the start, for these runs (a router already loaded is kept)
  → {"error": "one line"} for a command that cannot be done (the host goes on)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from trinity.data.questions import Question
from trinity.errors import InputError, TrinityError
from trinity.model import ROLES
from trinity.optim.routing import load_trained
from trinity.optim.runinputs import load_run_inputs

PLAYGROUND_DIR = "playground"
QUESTIONS_SHOWN = 50


def _say(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, allow_nan=False, default=str) + "\n")
    sys.stdout.flush()


class Host:
    def __init__(self, runs: list[str], runs_root: str) -> None:
        self.paths = [Path(r) for r in runs]
        self.root = Path(runs_root)
        self.trained = [load_trained(p) for p in self.paths]
        self.questions: list[dict[str, Any]] = []
        for p in self.paths:
            self.questions.append(self._run_questions(p))

    def set_runs(self, runs: list[str]) -> None:
        """Host these runs from now on: a router already loaded is kept, a new one loaded (torch
        is imported once per host, so adding a run side by side costs its router only)."""
        have = {p: (tr, qs) for p, tr, qs in zip(self.paths, self.trained, self.questions)}
        paths = [Path(r) for r in runs]
        loaded = [have[p] if p in have else (load_trained(p), self._run_questions(p)) for p in paths]
        self.paths = paths
        self.trained = [tr for tr, _ in loaded]
        self.questions = [qs for _, qs in loaded]

    @staticmethod
    def _run_questions(path: Path) -> dict[str, Any]:
        """The run's test-split questions (else its first ones), by id."""
        try:
            inputs = load_run_inputs(path)
        except Exception:  # a run whose questions are gone still routes typed questions
            return {}
        ids = (inputs.splits or {}).get("test") or [q.id for q in inputs.questions]
        by_id = {q.id: q for q in inputs.questions}
        return {i: by_id[i] for i in ids[:QUESTIONS_SHOWN] if i in by_id}

    def ready(self) -> dict[str, Any]:
        runs = []
        for p, tr, qs in zip(self.paths, self.trained, self.questions):
            runs.append(
                {
                    "name": p.name,
                    "path": str(p),
                    "models": tr.models,
                    "competition": tr.competition,
                    "questions": [
                        {
                            "id": q.id,
                            "question": q.question,
                            "kind": q.kind,
                            "answer": q.answer if q.kind != "code" else None,
                        }
                        for q in qs.values()
                    ],
                }
            )
        return {"runs": runs}

    def question(self, cmd: dict[str, Any], i: int):
        qid = cmd.get("qid")
        if qid:
            for qs in [self.questions[i], *self.questions]:
                if qid in qs:
                    return qs[qid]
            raise InputError(f"question {qid} is not among the runs' questions")
        text = str(cmd.get("question") or "").strip()
        if not text:
            raise InputError("type a question first")
        kind = cmd.get("kind") or "math"
        if kind not in ("math", "mc", "code"):
            raise InputError(f"kind must be math, mc or code, not {kind!r}")
        ref = cmd.get("reference")
        return Question("playground", "playground", text, None if ref in (None, "") else str(ref), kind)

    def route(self, cmd: dict[str, Any]) -> dict[str, Any]:
        turns = [tuple(t) for t in (cmd.get("turns") or [])]
        out = []
        for i, tr in enumerate(self.trained):
            q = self.question(cmd, i)
            r = tr.route([q], [turns])
            out.append(
                {
                    "run": i,
                    "model_probs": {m: round(float(p), 4) for m, p in zip(tr.models, r.model_probs[0])},
                    "role_probs": {n: round(float(p), 4) for n, p in zip(ROLES, r.role_probs[0])},
                    "model": tr.models[int(r.model_idx[0])],
                    "role": ROLES[int(r.role_idx[0])],
                }
            )
        return {"route": out}

    def live(self, cmd: dict[str, Any]) -> None:
        # lazy: only a live question needs the serve engine (the session loop, the ledger, sqlite3:
        # 38 modules, ~30 ms after the router's); a host that only routes never loads it
        from trinity.serve.engine import ServeEngine

        budget = cmd.get("budget_usd")
        if not isinstance(budget, (int, float)) or budget <= 0:
            raise InputError("a live session needs a budget > 0")
        for i, (path, tr) in enumerate(zip(self.paths, self.trained)):
            q = self.question(cmd, i)
            engine = ServeEngine.load(
                path,
                budget_usd=float(budget),
                purpose="playground",
                out_dir=self.root / PLAYGROUND_DIR,
                budget_scope="engine",
                trained=tr,
            )

            async def go(engine: ServeEngine = engine, i: int = i, q: Any = q) -> None:
                async def on_turn(info: Any) -> None:
                    _say({"turn": info.to_json(), "run": i})

                await engine.open()
                try:
                    s = await engine.session(q, "local", on_turn)
                finally:
                    await engine.close()
                _say({"session": s.extension(False), "answer_text": s.answer_text, "run": i})

            asyncio.run(go())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m minertui.jobs.playground")
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--runs-root", required=True)
    args = ap.parse_args(argv)

    try:
        host = Host(args.runs, args.runs_root)
    except TrinityError as e:
        _say({"error": str(e), "fatal": True})
        return 1
    _say({"ready": host.ready()})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            cmd = json.loads(line)
            if cmd.get("op") == "route":
                _say(host.route(cmd))
            elif cmd.get("op") == "live":
                host.live(cmd)
                _say({"live_done": True})
            elif cmd.get("op") == "runs":
                try:
                    host.set_runs([str(r) for r in cmd["runs"]])
                except TrinityError as e:  # as at the start: the app starts a host again
                    _say({"error": str(e), "fatal": True})
                    return 1
                _say({"ready": host.ready()})
            else:
                _say({"error": f"unknown op {cmd.get('op')!r}"})
        except TrinityError as e:
            _say({"error": str(e)})
        except Exception as e:  # one line to the app, never a traceback
            _say({"error": f"{type(e).__name__}: {e}"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
