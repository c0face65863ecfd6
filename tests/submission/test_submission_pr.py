"""Opening the PR through the GitHub REST API (a real HTTP server on 127.0.0.1 stands in for
api.github.com), and the compare-URL fallback derived from https / ssh remotes."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from submission_helpers import git, isolated_env, make_repo, make_run  # noqa: F401

from trinity.cli import main
from trinity.submission.github import GitHubRepo, compare_url, parse_remote_url
from trinity.submission.gitsubmit import execute_plan, plan_submission
from trinity.submission.history import SubmissionHistory
from trinity.submission.pack import pack_run

TOKEN = "ghp" + "_TESTTOKEN0123456789abcdefghijklmnopqr"  # fake; split so no token-shaped literal


class FakeGitHub:
    """Records every request; answers POST /repos/{o}/{r}/pulls with `status`."""

    def __init__(self, status: int = 201, existing: bool = False):
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, code: int, obj) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.requests.append(
                    {"method": "POST", "path": self.path, "headers": dict(self.headers), "body": body.decode()}
                )
                if status == 201:
                    self._reply(201, {"number": 7, "html_url": "https://github.com/comp-org/tinyrouter/pull/7"})
                elif existing:
                    self._reply(
                        422,
                        {
                            "message": "Validation Failed",
                            "errors": [{"message": "A pull request already exists for alice:submission/alice-gen1."}],
                        },
                    )
                else:
                    self._reply(status, {"message": f"boom {self.headers.get('Authorization')}"})

            def do_GET(self):  # noqa: N802
                outer.requests.append({"method": "GET", "path": self.path, "headers": dict(self.headers), "body": ""})
                self._reply(200, [{"number": 5, "html_url": "https://github.com/comp-org/tinyrouter/pull/5"}])

            def log_message(self, *a):  # keep pytest output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeGitHub":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def bundle(tmp_path):
    work = make_repo(tmp_path / "git")
    run = make_run(tmp_path / "runs" / "r1")
    return work, pack_run(run.path, "alice", "tinyrouter", out=work)


def test_pr_through_the_api_sends_the_token_only_in_the_header(bundle, monkeypatch, capsys, tmp_path):
    work, b = bundle
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    with FakeGitHub() as gh:
        rc = main(
            ["submit", str(b.path), "--repo", str(work), "--miner", "alice", "--push", "--pr", "--api-url", gh.url]
        )
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "PR: https://github.com/comp-org/tinyrouter/pull/7" in out
    assert len(gh.requests) == 1
    req = gh.requests[0]
    assert req["path"] == "/repos/comp-org/tinyrouter/pulls"
    assert req["headers"]["Authorization"] == f"Bearer {TOKEN}"
    body = json.loads(req["body"])
    assert body["head"] == "alice:submission/alice-gen1" and body["base"] == "main"
    assert body["title"] == "[submission] alice gen 1 — composite 0.5500 fitness"  # the figure, never a bare name
    assert "submissions/alice/1" in body["body"] and "PASS **ledger**" in body["body"]
    # the token is nowhere but the Authorization header
    assert TOKEN not in req["path"] and TOKEN not in req["body"]
    assert all(TOKEN not in v for k, v in req["headers"].items() if k.lower() != "authorization")
    assert TOKEN not in out and TOKEN not in err
    assert TOKEN not in SubmissionHistory.open().path.read_text()
    assert SubmissionHistory.open().records()[-1]["pr_url"] == "https://github.com/comp-org/tinyrouter/pull/7"


def test_api_error_is_redacted_and_explains_how_to_continue(bundle, monkeypatch):
    work, b = bundle
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    with FakeGitHub(status=502) as gh:
        res = execute_plan(plan_submission(b.path, work, "alice", push=True, pr=True, api_url=gh.url))
    assert not res.ok and res.pushed  # the push happened; only the PR is missing
    assert "HTTP 502" in res.message and res.compare_url in res.message and "trinity submit" in res.message
    logged = res.message + "".join(s.command + s.output for s in res.log)
    assert TOKEN not in logged and "***" in logged  # the server echoed the header; it was scrubbed
    assert TOKEN not in SubmissionHistory.open().path.read_text()

    # retrying opens the PR without a second commit or push of anything new
    with FakeGitHub(status=422, existing=True) as gh:
        plan = plan_submission(
            b.path, work, "alice", push=True, pr=True, api_url=gh.url, history=SubmissionHistory.open()
        )
        assert plan.ok, plan.refusals  # a pushed attempt of the same bundle is not a second one
        res2 = execute_plan(plan)
    assert res2.ok and res2.commit == res.commit
    assert res2.pr_url == "https://github.com/comp-org/tinyrouter/pull/5"
    assert [r["method"] for r in gh.requests] == ["POST", "GET"]
    assert "head=alice%3Asubmission%2Falice-gen1" in gh.requests[1]["path"]


def test_without_a_token_the_compare_url_is_printed(bundle, capsys):
    work, b = bundle
    assert main(["submit", str(b.path), "--repo", str(work), "--miner", "alice", "--push", "--pr"]) == 0
    out = capsys.readouterr().out
    assert "GITHUB_TOKEN is not set" in out
    assert "https://github.com/comp-org/tinyrouter/compare/main...alice:submission/alice-gen1?expand=1" in out


@pytest.mark.parametrize(
    "url, expected",
    [
        ("https://github.com/comp-org/tinyrouter.git", GitHubRepo("github.com", "comp-org", "tinyrouter")),
        ("https://github.com/comp-org/tinyrouter", GitHubRepo("github.com", "comp-org", "tinyrouter")),
        ("https://x-access@github.com/alice/tiny.router.git/", GitHubRepo("github.com", "alice", "tiny.router")),
        ("git@github.com:alice/tinyrouter.git", GitHubRepo("github.com", "alice", "tinyrouter")),
        ("ssh://git@github.com/alice/tinyrouter.git", GitHubRepo("github.com", "alice", "tinyrouter")),
        ("ssh://git@ghe.example.com:2222/team/repo", GitHubRepo("ghe.example.com", "team", "repo")),
        ("/srv/git/fork.git", None),
        ("file:///srv/git/fork.git", None),
    ],
)
def test_remote_urls(url, expected):
    assert parse_remote_url(url) == expected


def test_compare_url_from_remotes_fork_and_single_repo(tmp_path):
    work = make_repo(tmp_path / "git")
    run = make_run(tmp_path / "runs" / "r1")
    b = pack_run(run.path, "alice", "tinyrouter", out=work)
    # fork: origin (ssh) is alice's, upstream (https) is the competition's
    plan = plan_submission(b.path, work, "alice", base="main")
    assert (
        plan.compare_url == "https://github.com/comp-org/tinyrouter/compare/main...alice:submission/alice-gen1?expand=1"
    )
    assert plan.pr_head == "alice:submission/alice-gen1"
    # a single https remote that is both
    git(work, "remote", "remove", "upstream")
    git(work, "remote", "set-url", "origin", "https://github.com/comp-org/tinyrouter.git")
    plan = plan_submission(b.path, work, "alice", base="dev")
    assert plan.upstream == "origin"
    assert (
        plan.compare_url
        == "https://github.com/comp-org/tinyrouter/compare/dev...comp-org:submission/alice-gen1?expand=1"
    )
    assert (
        compare_url(GitHubRepo("github.com", "o", "r"), "main", "u", "b")
        == "https://github.com/o/r/compare/main...u:b?expand=1"
    )


def test_plain_path_remotes_have_no_compare_url(tmp_path, monkeypatch):
    work = make_repo(tmp_path / "git")
    git(work, "remote", "remove", "upstream")
    git(work, "remote", "set-url", "origin", str(tmp_path / "git" / "fork.git"))
    git(work, "fetch", "-q", "origin")
    run = make_run(tmp_path / "runs" / "r1")
    b = pack_run(run.path, "alice", "tinyrouter", out=work)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    plan = plan_submission(b.path, work, "alice", push=True, pr=True)
    assert plan.compare_url is None and plan.target is None
    assert "not a GitHub URL" in "\n".join(plan.describe())
    res = execute_plan(plan)
    assert res.ok and res.pushed and res.pr_url is None and "open the pull request by hand" in res.message


def test_scrub_removes_url_credentials_and_key_values(monkeypatch):
    from trinity.submission.gitsubmit import scrub

    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-v1-" + "ab" * 20)
    text = f"To https://alice:{TOKEN}@github.com/a/b.git\nkey sk-or-v1-{'ab' * 20} echoed"
    out = scrub(text)
    assert TOKEN not in out and "ab" * 20 not in out
    assert "https://***@github.com/a/b.git" in out
