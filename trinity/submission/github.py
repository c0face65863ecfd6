"""GitHub side of a submission: remote URLs → owner/repo, the compare URL, and the PR REST call.

The token is sent only in the `Authorization` header; it never goes into a URL, argv, a log
line or an error message (`redact` scrubs any echo of it from response text we keep).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import httpx

from trinity.errors import TrinityError

DEFAULT_API_URL = "https://api.github.com"
TOKEN_ENV = "GITHUB_TOKEN"

_HTTPS = re.compile(
    r"^(?:https?|git)://(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?/(?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?/?$"
)
_SSH_URL = re.compile(r"^ssh://(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?/(?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?/?$")
_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^/:]+):(?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?/?$")


class PullRequestError(TrinityError):
    """The GitHub API refused or could not be reached while opening the PR."""

    exit_code = 5


@dataclass(frozen=True)
class GitHubRepo:
    host: str
    owner: str
    name: str

    @property
    def slug(self) -> str:
        return f"{self.owner}/{self.name}"


def parse_remote_url(url: str | None) -> GitHubRepo | None:
    """owner/repo of an https, ssh:// or scp-style (git@host:owner/repo.git) remote URL."""
    if not url:
        return None
    url = url.strip()
    for pat in (_HTTPS, _SSH_URL, _SCP):
        m = pat.match(url)
        if m and not (pat is _SCP and "/" in m.group("host")):
            return GitHubRepo(m.group("host").lower(), m.group("owner"), m.group("name"))
    return None


def compare_url(target: GitHubRepo, base: str, head_owner: str, branch: str) -> str:
    return f"https://{target.host}/{target.slug}/compare/{base}...{head_owner}:{branch}?expand=1"


def api_base_url(target: GitHubRepo | None, explicit: str | None = None) -> str:
    """`--api-url`, else `$GITHUB_API_URL`, else api.github.com (or `https://HOST/api/v3` for a
    GitHub Enterprise host)."""
    if explicit:
        return explicit.rstrip("/")
    env = os.environ.get("GITHUB_API_URL")
    if env:
        return env.rstrip("/")
    if target is None or target.host in ("github.com", "www.github.com"):
        return DEFAULT_API_URL
    return f"https://{target.host}/api/v3"


def redact(text: str, token: str | None) -> str:
    return text.replace(token, "***") if token else text


def _headers(token: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
        "User-Agent": "minertui-trinity",
    }


def _error_text(resp: httpx.Response, token: str) -> str:
    try:
        body = resp.json()
        msg = body.get("message", "") if isinstance(body, dict) else ""
        errs = body.get("errors") if isinstance(body, dict) else None
        if isinstance(errs, list) and errs:
            msg += " (" + "; ".join(str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in errs) + ")"
    except ValueError:
        msg = resp.text[:300]
    return redact(f"HTTP {resp.status_code} {msg}".strip(), token)


def open_pull_request(
    api_url: str, target: GitHubRepo, *, head: str, base: str, title: str, body: str, token: str, timeout: float = 30.0
) -> tuple[str, bool]:
    """POST /repos/{owner}/{repo}/pulls → (html_url, created). An open PR for the same head is
    found and returned (created=False), so a retry never opens a second one."""
    url = f"{api_url}/repos/{target.slug}/pulls"
    payload: dict[str, Any] = {"title": title, "head": head, "base": base, "body": body, "maintainer_can_modify": True}
    try:
        with httpx.Client(timeout=timeout, headers=_headers(token), follow_redirects=False) as client:
            resp = client.post(url, json=payload)
            if resp.status_code == 201:
                return str(resp.json()["html_url"]), True
            if resp.status_code == 422 and "already exists" in resp.text:
                found = client.get(url, params={"head": head, "base": base, "state": "open"})
                if found.status_code == 200 and isinstance(found.json(), list) and found.json():
                    return str(found.json()[0]["html_url"]), False
            raise PullRequestError(f"GitHub API refused the pull request at {url}: {_error_text(resp, token)}")
    except httpx.HTTPError as e:
        raise PullRequestError(
            f"GitHub API at {api_url} unreachable ({type(e).__name__}: {redact(str(e), token)})"
        ) from None
    except (KeyError, ValueError) as e:
        raise PullRequestError(f"GitHub API at {url} answered without a PR URL ({e})") from None
