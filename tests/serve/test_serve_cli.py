"""`trinity serve` and `trinity serve-keys` on the command line: a key shown once and stored as a
hash, and each bad input one line naming what to do, a non-zero exit, nothing written."""

import json

import pytest

from trinity.cli import main
from trinity.serve.keys import KeyStore, key_hash


def run(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_serve_keys_add_prints_the_key_once_and_stores_its_hash(tmp_path, capsys):
    f = tmp_path / "keys.json"
    rc, out, err = run(["serve-keys", "add", str(f), "alice", "--budget-usd", "0.5"], capsys)
    assert rc == 0 and "only its hash is stored" in err
    key = out.strip()
    doc = json.loads(f.read_text())
    assert doc == {"keys": [{"name": "alice", "sha256": key_hash(key), "budget_usd": 0.5}]}
    assert key not in f.read_text() and (f.stat().st_mode & 0o077) == 0
    assert KeyStore.load(f).check(key).name == "alice" and KeyStore.load(f).check(key + "x") is None
    rc, out, err = run(["serve-keys", "add", str(f), "alice"], capsys)
    assert rc != 0 and "already has a key named 'alice'" in err and len(json.loads(f.read_text())["keys"]) == 1


@pytest.mark.parametrize(
    "extra, message",
    [
        ([], "pass --keys FILE"),
        (["--no-auth", "--host", "0.0.0.0"], "only allowed on a loopback --host"),
        (["--no-auth", "--keys", "k.json"], "exclude each other"),
        (["--keys", "missing.json"], "keys file missing.json not found"),
        (["--no-auth", "--max-sessions", "0"], "--max-sessions must be >= 1"),
        (["--no-auth", "--budget-usd", "-1"], "--budget-usd must be >= 0"),
    ],
)
def test_bad_serve_arguments_are_one_line(tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.chdir(tmp_path)
    argv = ["serve", str(tmp_path), "--budget-usd", "1", *extra]
    rc, out, err = run(argv, capsys)
    assert rc != 0 and message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "serve").exists()


def test_serving_a_folder_that_is_no_run_says_so(tmp_path, capsys):
    rc, out, err = run(["serve", str(tmp_path), "--no-auth", "--budget-usd", "1"], capsys)
    assert rc != 0 and "is not a run directory" in err and err.count("\n") == 1


def test_a_malformed_keys_file_is_one_line(tmp_path, capsys):
    f = tmp_path / "keys.json"
    f.write_text('{"keys": [{"name": "a", "sha256": "not-a-hash", "budget_usd": 1}]}')
    rc, out, err = run(["serve", str(tmp_path), "--keys", str(f), "--budget-usd", "1"], capsys)
    assert rc != 0 and "sha256 must be 64 lower-case hex digits" in err


def test_trinity_serve_runs_answers_and_stops_on_sigterm(run_copy):
    """The real command in a process of its own: it says where it listens, answers, and on
    SIGTERM finishes, closes its ledger and says what it served."""
    import signal
    import subprocess
    import sys

    import openai

    from trinity.benchmarks.practice import practice_questions

    argv = [sys.executable, "-m", "trinity", "serve", str(run_copy), "--no-auth", "--port", "0", "--budget-usd", "1"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        for line in proc.stderr:  # a library warning may come first: the line that says where
            seen.append(line)
            if " at http://" in line or len(seen) > 50:
                break
        assert " at http://127.0.0.1:" in line, "".join(seen)
        url = line.split(" at ", 1)[1].split()[0]
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0)
        q = next(q for q in practice_questions() if q.kind == "math")
        reply = client.chat.completions.create(model="router", messages=[{"role": "user", "content": q.question}])
        n = reply.model_extra["trinity"]["n_turns"]
    finally:
        proc.send_signal(signal.SIGTERM)
        rest = proc.stderr.read()
        rc = proc.wait(timeout=120)
    assert rc == 0 and "stopped: 1 session(s) served" in rest and "Traceback" not in rest
    from trinity.pool.ledger import verify_ledger

    assert verify_ledger(run_copy / "serve" / "ledger.jsonl").n_records == n
