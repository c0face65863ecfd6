"""Where a live evaluation's sessions win or lose after turn 1: each held-out router session's
Worker answers graded turn by turn, from the run's own journal (keys
`eval/test/router/c0/QUESTION/tN/MODEL/ROLE`). Practice questions only (the bench's).

    python scripts/eval_turns_probe.py DIR/s0/run-new DIR/s1/run-new ...

Prints each session whose turn-1 answer was right and whose last Worker answer was not, then
the counts: sessions, turn-1 answers right, last Worker answers right, lost and won after turn 1,
sessions begun by a non-Worker.
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

from trinity.benchmarks.practice import practice_questions
from trinity.grading import grade_question

PREFIX = "eval/test/router/c0/"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="run directories a live evaluation wrote to")
    a = ap.parse_args()
    questions = {q.id: q for q in practice_questions()}
    tot: collections.Counter[str] = collections.Counter()
    for run in a.runs:
        sessions: dict[str, dict[int, tuple[str, str]]] = collections.defaultdict(dict)
        for line in (Path(run) / "journal.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            key = str(row.get("key") or "")
            if not key.startswith(PREFIX):
                continue
            parts = key.split("/")
            qid, turn, role = parts[4], int(parts[5][1:]), parts[-1]
            sessions[qid][turn] = (role, str((row.get("result") or {}).get("text") or ""))
        for qid, turns in sessions.items():
            seq = []
            for t in sorted(turns):
                role, text = turns[t]
                if role == "Worker":
                    seq.append("W+" if grade_question(questions[qid], text).correct else "W-")
                else:
                    seq.append(role[0] + ("A" if role == "Verifier" and "ACCEPT" in text else ""))
            workers = [s for s in seq if s[0] == "W"]
            first_right = seq[0] == "W+"
            last_right = bool(workers) and workers[-1] == "W+"
            tot["sessions"] += 1
            tot["turn-1 answer right"] += first_right
            tot["last Worker answer right"] += last_right
            tot["begun by a non-Worker"] += seq[0][0] != "W"
            if first_right and not last_right:
                tot["lost after turn 1"] += 1
                print(run, qid, " ".join(seq))
            if last_right and not first_right:
                tot["won after turn 1"] += 1
    print(dict(tot))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
