"""`plan_submission` → `SubmitPlan` (shown first) → `execute_plan` → `SubmitResult`.

The commit is built with plumbing on a temporary index (`read-tree`, `add`, `write-tree`,
`commit-tree`, `update-ref`), so it holds exactly the parent's tree plus the bundle, and the
user's checkout, index and current branch are never touched. The branch (the competition's
convention: `submission/<miner>-gen<n>` for TinyRouter, `sn74-<miner>` for MiniRouter) starts at the
freshly fetched base (`<upstream>/<base>`), or continues an existing branch whose commits only
touch this miner's submissions.

Retry safety: when the branch tip already holds this exact bundle, no commit is made (the new
tree would equal the tip's); the push and the PR are idempotent too (an existing PR for the
branch is found, not duplicated). A failure at any step stops there, says what state the repo is
in, and gives the command to continue.

Every git command is recorded as a `StepResult` (command line, exit status, output) and passed
to `on_step` when it starts and when it ends, so the app can stream the log.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from trinity.competition.notice import rewards_notice
from trinity.competition.pr import pr_body, pr_missing, pr_title
from trinity.competition.profiles import get_profile
from trinity.errors import InputError, TrinityError
from trinity.runs.records import EVAL_FILE, read_eval_file
from trinity.submission import github
from trinity.submission.bundle import MINIROUTER, bundle_files, detect_format, load_bundle
from trinity.submission.gates import GateReport, check_bundle
from trinity.submission.history import SubmissionHistory
from trinity.submission.pack import check_miner
from trinity.submission.pool_config import key_values
from trinity.submission.scan import scan_files

# prior bundles the novelty gate compares against: one directory or several (`check_bundle`)
Against = Sequence[str | os.PathLike[str]] | str | os.PathLike[str] | None

if TYPE_CHECKING:
    from git import Repo

    from trinity.competition.profiles import Profile

ZERO_OID = "0" * 40
_URL_CREDENTIALS = re.compile(r"(://)[^/@\s]+@")


def scrub(text: str) -> str:
    """`text` without URL credentials (https://user:token@host) or the value of any key variable."""
    text = _URL_CREDENTIALS.sub(r"\1***@", text)
    for _, value in key_values():
        text = text.replace(value, "***")
    return text


def _public(text: str, root: Path) -> str:
    """Text for the public PR: local paths shortened (repo-relative, ~ for home)."""
    text = text.replace(str(root) + "/", "")
    home = str(Path.home())
    return text.replace(home + "/", "~/") if home not in ("/", "") else text


class SubmitRefused(TrinityError):
    """A submit plan has refusals (dirty tree, secret, big file, failing gate …)."""

    exit_code = 5


@dataclass
class StepResult:
    name: str
    command: str
    status: str = "running"  # running | ok | failed | skipped
    output: str = ""
    seconds: float = 0.0

    def line(self) -> str:
        out = f" → {self.output.strip().splitlines()[-1]}" if self.output.strip() else ""
        return f"[{self.status}] $ {self.command}{out}"


@dataclass
class SubmitPlan:
    repo: Path
    bundle: Path
    bundle_rel: str
    bundle_hash: str
    bundle_format: str
    miner: str
    branch: str
    base: str
    remote: str
    upstream: str
    base_ref: str
    files: list[str]
    commit_message: str
    push: bool
    open_pr: bool
    dry_run: bool
    skip_gates: bool
    pr_title: str
    pr_body: str
    target: github.GitHubRepo | None
    head_owner: str | None
    compare_url: str | None
    api_url: str
    push_url: str
    branch_state: str
    history: SubmissionHistory
    gate_report: GateReport | None
    continue_command: str
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.refusals

    @property
    def pr_head(self) -> str:
        return f"{self.head_owner}:{self.branch}" if self.head_owner else self.branch

    def describe(self) -> list[str]:
        lines = [
            f"repository  {self.repo}",
            f"bundle      {self.bundle_rel} ({self.bundle_format}, hash {self.bundle_hash[:12]})",
            f"branch      {self.branch} from {self.base_ref} ({self.branch_state})",
            "fetch       git fetch " + f"{self.upstream} {self.base} (base brought up to date first)",
            "files       " + (f"{len(self.files)} file(s), only the bundle:" if self.files else "none"),
            *[f"              {f}" for f in self.files],
            "commit message:",
            *[f"    {ln}" for ln in self.commit_message.splitlines()],
            (
                "push        " + f"{self.remote} ({self.push_url}) refs/heads/{self.branch}"
                if self.push
                else "push        no (pass --push)"
            ),
        ]
        if self.open_pr:
            how = (
                f"POST {self.api_url}/repos/{self.target.slug}/pulls head={self.pr_head} base={self.base}"
                if self.target
                else "not possible: the upstream remote is not a GitHub URL"
            )
            lines.append(f"pull request {how} (needs ${github.TOKEN_ENV}; else the compare URL)")
        lines.append(f"compare URL {self.compare_url or 'n/a (remotes are not GitHub URLs)'}")
        lines += ["PR title    " + self.pr_title, "PR body:", *[f"    {ln}" for ln in self.pr_body.splitlines()]]
        if self.gate_report is not None:
            lines += ["gates:", *[f"  {ln}" for ln in self.gate_report.lines()]]
        elif self.skip_gates:
            lines.append("gates       SKIPPED (--skip-gates; recorded in the commit message)")
        lines += [f"note        {n}" for n in self.notes]
        lines += [f"REFUSED     {r}" for r in self.refusals]
        return lines


@dataclass
class SubmitResult:
    ok: bool
    message: str
    commit: str | None = None
    branch: str | None = None
    pushed: bool = False
    pr_url: str | None = None
    compare_url: str | None = None
    continue_command: str | None = None
    log: list[StepResult] = field(default_factory=list)


# ---- small git helpers --------------------------------------------------------------------------


def _open_repo(path: str | os.PathLike[str]) -> Repo:
    import git  # lazy: GitPython loaded only when used

    try:
        repo = git.Repo(path)
    except git.NoSuchPathError:
        raise InputError(f"repository not found: {path}") from None
    except git.InvalidGitRepositoryError:
        raise InputError(
            f"{path} is not a git repository; pass --repo with your clone of the competition repository"
        ) from None
    if repo.bare:
        raise InputError(f"{path} is a bare repository; pass a clone with a working tree")
    return repo


def _git(repo: Repo, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    status, out, err = repo.git.execute(
        ["git", *args], with_extended_output=True, with_exceptions=False, env=env, strip_newline_in_stdout=True
    )
    return int(status), str(out), str(err)


def _rev(repo: Repo, ref: str) -> str | None:
    code, out, _ = _git(repo, "rev-parse", "--verify", "--quiet", ref + "^{commit}")
    return out.strip() if code == 0 and out.strip() else None


def _config(repo: Repo, key: str) -> str | None:
    code, out, _ = _git(repo, "config", "--get", key)
    return out.strip() if code == 0 else None


def _changed_paths(repo: Repo, commit: str) -> list[str]:
    _, out, _ = _git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", "--root", commit)
    return [ln for ln in out.splitlines() if ln]


def _under(path: str, area: str) -> bool:
    return path == area or path.startswith(area.rstrip("/") + "/")


def _porcelain(repo: Repo) -> list[tuple[str, str]]:
    """(XY status, path) for every change in the working tree and index, untracked included."""
    _, out, _ = _git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    entries, parts, i = [], out.split("\0"), 0
    while i < len(parts):
        item = parts[i]
        i += 1
        if len(item) < 4:
            continue
        xy, path = item[:2], item[3:]
        entries.append((xy, path))
        if xy[0] in "RC":  # a rename/copy carries its source path in the next field
            entries.append((xy, parts[i]))
            i += 1
    return entries


@dataclass
class _BranchState:
    local: str | None  # refs/heads/<branch> now (the old value for update-ref)
    tip: str | None  # what the branch continues from: the local or the remote tip
    ahead: list[str]  # commits on `tip` not in the base ref, newest first
    unrelated: list[str]  # "sha subject" of those that touch paths outside the area
    parent: str | None  # the commit the new one goes on
    describe: str
    diverged: str | None = None  # why local and remote branch cannot be reconciled


def _is_ancestor(repo: Repo, a: str, b: str) -> bool:
    return _git(repo, "merge-base", "--is-ancestor", a, b)[0] == 0


def _branch_state(repo: Repo, branch: str, base_ref: str, area: str, remote_ref: str | None = None) -> _BranchState:
    """Where the submission commit goes. The branch continues from whichever of the local branch
    and the fork's branch (`remote_ref`) contains the other; from the base when neither exists
    or when everything on it is already in the base."""
    local = _rev(repo, f"refs/heads/{branch}")
    remote_tip = _rev(repo, remote_ref) if remote_ref else None
    base = _rev(repo, base_ref)
    tip = local or remote_tip
    if local and remote_tip and local != remote_tip:
        if _is_ancestor(repo, remote_tip, local):
            tip = local
        elif _is_ancestor(repo, local, remote_tip):
            tip = remote_tip  # e.g. pushed from another clone: continue from the fork's tip
        else:
            why = (
                f"local {branch} ({local[:10]}) and {remote_ref} ({remote_tip[:10]}) have diverged; "
                f"compare them with `git log --oneline --graph {branch} {remote_ref}` and delete or "
                "reset the one you do not want"
            )
            return _BranchState(local, None, [], [], None, why, diverged=why)
    if tip is None:
        return _BranchState(local, None, [], [], base, "new branch")
    where = "exists" if local else f"exists only on the remote ({remote_ref})"
    if base is None:
        return _BranchState(local, tip, [], [], None, f"{where} at {tip[:10]}; base not fetched yet")
    _, out, _ = _git(repo, "rev-list", f"{base}..{tip}")
    ahead = [c for c in out.splitlines() if c]
    unrelated = []
    for c in ahead:
        if not all(_under(p, area) for p in _changed_paths(repo, c)):
            _, subject, _ = _git(repo, "log", "-1", "--format=%s", c)
            unrelated.append(f"{c[:10]} {subject.strip()}")
    if not ahead:
        return _BranchState(
            local, tip, [], [], base, f"{where} at {tip[:10]}, contained in {base_ref}: moves to the new commit"
        )
    return _BranchState(
        local,
        tip,
        ahead,
        unrelated,
        tip,
        f"{where} with {len(ahead)} commit(s) on {base_ref} touching only {area}/: the new commit goes on top",
    )


def _has_path(repo: Repo, commit: str, rel: str) -> bool:
    _, out, _ = _git(repo, "ls-tree", "--full-tree", "--name-only", commit, "--", rel)
    return bool(out.strip())


def _taken(rel: str, commit: str, where: str) -> str:
    return (
        f"{rel} already exists on {where} ({commit[:10]}) with other files: a TinyRouter submission "
        "is never overwritten; pack again so the bundle gets the next free number, after restoring "
        f"the earlier bundles in your checkout (git restore --source {commit[:10]} -- {rel.rsplit('/', 1)[0]})"
    )


def _rel_files(p: "SubmitPlan") -> list[str]:
    prefix = p.bundle_rel + "/"
    return [f[len(prefix) :] for f in p.files if f.startswith(prefix)]


def _holds_bundle(repo: Repo, commit: str, rel: str, files: list[Path], root: Path) -> bool:
    """True when `commit` has exactly these files (same content) under `rel`. Writes nothing:
    blob ids come from `git hash-object` without -w (same filters as `git add`)."""
    _, listing, _ = _git(repo, "ls-tree", "-r", "--full-tree", commit, "--", rel)
    committed = {}
    for ln in listing.splitlines():
        meta, _, path = ln.partition("\t")
        committed[path] = meta.split()[-1]
    if not files or len(committed) != len(files):
        return False
    code, out, _ = _git(repo, "hash-object", "--", *[str(f) for f in files])
    blobs = out.split()
    if code != 0 or len(blobs) != len(files):
        return False
    return all(committed.get(f.relative_to(root).as_posix()) == b for f, b in zip(files, blobs))


# ---- the plan -----------------------------------------------------------------------------------


def _rerun_command(
    bundle: Path,
    repo: Path,
    miner: str,
    base: str,
    remote: str,
    upstream: str,
    push: bool,
    pr: bool,
    api_url: str | None,
    history: Path,
    skip_gates: bool,
    extra: list[str],
) -> str:
    argv = [
        "trinity",
        "submit",
        str(bundle),
        "--repo",
        str(repo),
        "--miner",
        miner,
        "--base",
        base,
        "--remote",
        remote,
        "--upstream",
        upstream,
        "--history",
        str(history),
        *extra,
    ]
    argv += ["--push"] if push else []
    argv += ["--pr"] if pr else []
    argv += ["--api-url", api_url] if api_url else []
    argv += ["--skip-gates"] if skip_gates else []
    return shlex.join(argv)


def _gate_args(
    against: Against,
    king: str | os.PathLike[str] | None,
    run_dir: str | os.PathLike[str] | None,
    pool_models: list[str] | None,
) -> list[str]:
    out: list[str] = []
    roots: list[str | os.PathLike[str]] = (
        [] if against is None else [against] if isinstance(against, (str, os.PathLike)) else list(against)
    )
    for a in roots:
        out += ["--against", str(Path(a).resolve())]
    out += ["--king", str(Path(king).resolve())] if king else []
    out += ["--run", str(Path(run_dir).resolve())] if run_dir else []
    out += ["--pool-models", ",".join(pool_models)] if pool_models else []
    return out


def _commit_message(
    miner: str, rel: str, info: dict[str, Any], bundle_hash: str, report: GateReport | None, skip_gates: bool
) -> str:
    best = info.get("best_fitness")
    gates = "SKIPPED (--skip-gates)" if skip_gates else "all pass" if report and report.ok else "not run"
    lines = [
        f"sn74: {miner} submission {rel}",
        "",
        f"run: {info.get('run_id') or 'unknown'}",
        f"best fitness: {best:.4f}" if isinstance(best, (int, float)) else "best fitness: unknown",
        f"ledger head: {info.get('ledger_head_hash') or 'none'}",
        f"bundle sha256: {bundle_hash}",
        f"gates: {gates}",
    ]
    return "\n".join(lines) + "\n"


def _pr_text(
    prof: Profile,
    miner: str,
    rel: str,
    info: dict[str, Any],
    report: GateReport | None,
    skip_gates: bool,
    extra: dict[str, Any],
) -> tuple[str, str]:
    """Title and body in the competition's form (`trinity.competition.pr`)."""
    parts = rel.split("/")
    n = int(parts[-1]) if parts[-1].isdigit() else None
    data = {
        **info,
        **{k: v for k, v in extra.items() if v is not None},
        "miner": miner,
        "n": n,
        "bundle": rel,
        "gates_ok": bool(report is not None and report.ok),
    }
    data.setdefault("pool_names", info.get("pool") if isinstance(info.get("pool"), list) else info.get("pool_models"))
    if isinstance(info.get("pool"), list):
        data["pool"] = info.get("provider") or "unknown"
    gate_lines = (
        ["Local gates were **skipped** (`--skip-gates`)."]
        if skip_gates
        else [f"- {r.status.upper()} **{r.name}**: {r.reason}" for r in report.results]
        if report
        else []
    )
    if report is not None and not skip_gates:
        gate_lines.append(f"- {prof.title} would say: {report.verdict()}")
    return pr_title(prof, data), pr_body(prof, data, gate_lines)


def plan_submission(
    bundle_dir: str | os.PathLike[str],
    repo: str | os.PathLike[str],
    miner: str,
    *,
    base: str = "main",
    remote: str = "origin",
    upstream: str | None = None,
    push: bool = False,
    pr: bool = False,
    dry_run: bool = False,
    skip_gates: bool = False,
    api_url: str | None = None,
    history: SubmissionHistory | str | os.PathLike[str] | None = None,
    against: Against = None,
    king: str | os.PathLike[str] | None = None,
    run_dir: str | os.PathLike[str] | None = None,
    pool_models: list[str] | None = None,
    competition: str | None = None,
    owner_id: str | None = None,
    key_id: str | None = None,
    branch: str | None = None,
) -> SubmitPlan:
    """Everything `execute_plan` will do, checked locally (no network); see `SubmitPlan.describe`."""
    check_miner(miner)
    r = _open_repo(repo)
    assert r.working_tree_dir is not None, "a bare repository was refused"
    root = Path(r.working_tree_dir).resolve()
    bundle = Path(bundle_dir).resolve()
    fmt = detect_format(bundle)
    hist = history if isinstance(history, SubmissionHistory) else SubmissionHistory.open(history)
    refusals: list[str] = []
    notes: list[str] = []
    try:
        rel = bundle.relative_to(root).as_posix()
    except ValueError:
        raise InputError(
            f"bundle {bundle} is not inside the repository {root}; pack it there with `trinity pack RUN --out {root} …`"
        ) from None
    if rel == ".":
        raise InputError(
            f"the bundle {bundle} is the repository itself; pass the bundle directory "
            "(submissions/<miner>/<n> or submissions/final_model)"
        )
    area = rel if fmt == MINIROUTER else str(Path(rel).parent.as_posix())
    remotes = {rm.name for rm in r.remotes}
    if remote not in remotes:
        raise InputError(
            f"remote {remote!r} not found in {root} (remotes: {', '.join(sorted(remotes)) or 'none'}); pass --remote"
        )
    upstream = upstream or ("upstream" if "upstream" in remotes else remote)
    if upstream not in remotes:
        raise InputError(f"remote {upstream!r} not found in {root}; pass --upstream")

    lb0 = load_bundle(bundle)
    prof = get_profile(competition or (lb0.receipt or lb0.summary or {}).get("competition") or fmt)
    tail = Path(rel).name
    branch = branch or prof.branch(miner, int(tail) if tail.isdigit() else None)
    if (
        not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,120}", branch)
        or ".." in branch
        or branch.endswith((".lock", "/"))
    ):
        raise InputError(f"branch name {branch!r} is not valid; use letters, digits, '-', '_', '.', '/'")
    base_ref = f"refs/remotes/{upstream}/{base}"

    # The working tree: tracked changes outside the bundle would be a different state than the
    # one the user sees in the PR; untracked files elsewhere are never committed.
    changes = _porcelain(r)
    dirty = [p for xy, p in changes if xy != "??" and not _under(p, rel)]
    untracked_elsewhere = [p for xy, p in changes if xy == "??" and not _under(p, rel)]
    if dirty:
        refusals.append(
            f"the repository has changes outside the bundle: {', '.join(dirty[:5])}"
            f"{' …' if len(dirty) > 5 else ''}; commit or stash them first"
        )
    if untracked_elsewhere:
        notes.append(f"{len(untracked_elsewhere)} untracked file(s) outside the bundle stay untouched")
    head_branch = r.head.reference.name if not r.head.is_detached else None
    if head_branch == branch:
        refusals.append(f"{branch} is checked out; switch to another branch first (git switch {base})")

    state = _branch_state(r, branch, base_ref, area, f"refs/remotes/{remote}/{branch}")
    if state.diverged:
        refusals.append(state.diverged)
    if state.unrelated:
        refusals.append(
            f"branch {branch} has commits unrelated to {area}/: {'; '.join(state.unrelated[:3])}; "
            f"rename or delete it (git branch -m {branch} {branch}-old)"
        )
    files_abs = bundle_files(bundle)
    if state.tip and _holds_bundle(r, state.tip, rel, files_abs, root):
        notes.append(f"{branch} already holds this bundle at {state.tip[:10]}: no new commit (a retry)")
    elif fmt != MINIROUTER and state.parent and _has_path(r, state.parent, rel):
        refusals.append(_taken(rel, state.parent, branch if state.parent == state.tip else base_ref))
    files = [p.relative_to(root).as_posix() for p in files_abs]
    for f in scan_files([(p, p.relative_to(root).as_posix()) for p in files_abs]):
        refusals.append(str(f))

    report = None
    if not skip_gates:
        report = check_bundle(
            bundle, against, king, hist, miner=miner, run_dir=run_dir, pool_models=pool_models, competition=prof.name
        )
        refusals += [f"gate {g.name} fails: {g.reason}" for g in report.failed()]
    lb = load_bundle(bundle)
    info = dict(lb.receipt or lb.summary or {})
    if fmt == MINIROUTER and lb.history is not None:
        info.setdefault("generations", len(lb.history))
    info.setdefault("run_id", (report.run_dir and Path(report.run_dir).name) if report else None)

    target = github.parse_remote_url(_config(r, f"remote.{upstream}.url"))
    fork = github.parse_remote_url(_config(r, f"remote.{remote}.url"))
    head_owner = fork.owner if fork else (target.owner if target and upstream == remote else None)
    cmp_url = github.compare_url(target, base, head_owner, branch) if target and head_owner else None
    extra = {"owner_id": owner_id, "key_id": key_id, **_local_score(report)}

    refusals += pr_missing(prof, {**info, **extra})

    notes.append("rewards: " + rewards_notice().line())
    title, body = _pr_text(prof, miner, rel, info, report, skip_gates, extra)
    body = _public(body, root)
    push_url = scrub(_config(r, f"remote.{remote}.pushurl") or _config(r, f"remote.{remote}.url") or remote)
    return SubmitPlan(
        repo=root,
        bundle=bundle,
        bundle_rel=rel,
        bundle_hash=lb.hash,
        bundle_format=fmt,
        miner=miner,
        branch=branch,
        base=base,
        remote=remote,
        upstream=upstream,
        base_ref=base_ref,
        files=files,
        commit_message=_commit_message(miner, rel, info, lb.hash, report, skip_gates),
        push=push,
        open_pr=pr,
        dry_run=dry_run,
        skip_gates=skip_gates,
        pr_title=title,
        pr_body=body,
        target=target,
        head_owner=head_owner,
        compare_url=cmp_url,
        api_url=github.api_base_url(target, api_url),
        push_url=push_url,
        branch_state=state.describe,
        history=hist,
        gate_report=report,
        continue_command=_rerun_command(
            bundle,
            root,
            miner,
            base,
            remote,
            upstream,
            push,
            pr,
            api_url,
            hist.path,
            skip_gates,
            _gate_args(against, king, run_dir, pool_models)
            + ["--competition", prof.name, "--branch", branch]
            + (["--owner-id", owner_id] if owner_id else [])
            + (["--key-id", key_id] if key_id else []),
        ),
        refusals=refusals,
        notes=notes,
    )


def _local_score(report: GateReport | None) -> dict[str, Any]:
    """The run's local evaluation (eval.json) for the PR's "Local eval score" line, when it has one:
    the router's accuracy on the test split (live when measured, else cached)."""
    if report is None or not report.run_dir:
        return {}

    path = Path(report.run_dir) / EVAL_FILE
    try:
        doc = read_eval_file(path) if path.exists() else None
    except InputError:
        return {}
    for key in ("live/test", "cached/test"):
        entry = doc.evaluations.get(key) if doc is not None else None
        acc = (entry.router or {}).get("accuracy") if entry is not None else None
        point = acc.get("point") if isinstance(acc, dict) else None
        if isinstance(point, (int, float)) and not isinstance(point, bool):
            return {"local_score": f"{point:.4f}", "local_score_settings": f"trinity eval ({path.name}, {key})"}
    return {}


# ---- execution ----------------------------------------------------------------------------------


class _Runner:
    def __init__(self, plan: SubmitPlan, on_step: Callable[[StepResult], None] | None):
        import git  # lazy: GitPython loaded only when used

        self.plan = plan
        self.repo = git.Repo(plan.repo)
        self.on_step = on_step or (lambda s: None)
        self.log: list[StepResult] = []

    def step(self, name: str, command: str) -> StepResult:
        s = StepResult(name, command)
        self.log.append(s)
        self.on_step(s)
        return s

    def finish(self, s: StepResult, ok: bool, output: str, t0: float, status: str | None = None) -> StepResult:
        s.status = status or ("ok" if ok else "failed")
        s.output = scrub(output)
        s.seconds = round(time.monotonic() - t0, 3)
        self.on_step(s)
        return s

    def git(
        self, name: str, *args: str, env: dict[str, str] | None = None, shown_args: tuple[str, ...] | None = None
    ) -> tuple[bool, str, StepResult]:
        shown = "git " + shlex.join(shown_args or args)
        if env and "GIT_INDEX_FILE" in env:
            shown = "GIT_INDEX_FILE=<temp> " + shown
        s = self.step(name, shown)
        t0 = time.monotonic()
        full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
        code, out, err = _git(self.repo, *args, env=full_env)
        text = "\n".join(x for x in (out.strip(), err.strip()) if x)
        self.finish(s, code == 0, text, t0)
        return code == 0, out.strip(), s


def execute_plan(
    plan: SubmitPlan, on_step: Callable[[StepResult], None] | None = None, token: str | None = None
) -> SubmitResult:
    """Run the plan. Refused plans raise `SubmitRefused`; a failing step returns `ok=False` with a
    message that says what state the repository is in and the command that continues."""
    if plan.refusals:
        if not plan.dry_run:
            record_attempt(plan, outcome="refused", message="; ".join(plan.refusals))
        raise SubmitRefused(
            f"submission refused: {plan.refusals[0]}"
            + (f" (+{len(plan.refusals) - 1} more)" if len(plan.refusals) > 1 else "")
        )
    if plan.dry_run:
        return SubmitResult(True, "dry run: nothing was done", branch=plan.branch, compare_url=plan.compare_url)
    run = _Runner(plan, on_step)
    result = _execute(plan, run, token if token is not None else os.environ.get(github.TOKEN_ENV))
    result.log = run.log
    _record(plan, result)
    return result


def _execute(plan: SubmitPlan, run: _Runner, token: str | None) -> SubmitResult:
    p = plan
    again = f"rerun: {p.continue_command}"

    def fail(msg: str, commit: str | None = None, pushed: bool = False) -> SubmitResult:
        return SubmitResult(
            False,
            msg,
            commit=commit,
            branch=p.branch,
            pushed=pushed,
            compare_url=p.compare_url,
            continue_command=p.continue_command,
        )

    ok, _, s = run.git("fetch", "fetch", p.upstream, f"+refs/heads/{p.base}:{p.base_ref}")
    if not ok:
        return fail(
            f"fetching {p.base} from {p.upstream} failed ({_last(s.output)}); nothing was changed. "
            f"Fix the remote or the network, then {again}"
        )
    # Does the fork already have the branch (a submission from another clone, or a push that
    # went through before a later step failed)? Then the new commit must go on top of it.
    remote_ref = f"refs/remotes/{p.remote}/{p.branch}"
    ok, heads, s = run.git("remote-branch", "ls-remote", "--heads", p.remote, f"refs/heads/{p.branch}")
    if not ok:
        return fail(f"could not reach {p.remote} ({_last(s.output)}); nothing was changed. {again}")
    if heads.strip():
        ok, _, s = run.git("fetch", "fetch", p.remote, f"+refs/heads/{p.branch}:{remote_ref}")
        if not ok:
            return fail(f"fetching {p.branch} from {p.remote} failed ({_last(s.output)}); nothing was changed. {again}")
    area = p.bundle_rel if p.bundle_format == MINIROUTER else str(Path(p.bundle_rel).parent.as_posix())
    state = _branch_state(run.repo, p.branch, p.base_ref, area, remote_ref if heads.strip() else None)
    if state.diverged:
        return fail(f"{state.diverged}; nothing was changed. Then {again}")
    if state.unrelated:
        return fail(
            f"after fetching, branch {p.branch} has commits unrelated to {area}/ "
            f"({'; '.join(state.unrelated[:3])}); nothing was changed. Rename or delete the branch, then {again}"
        )
    parent = state.parent
    assert parent is not None  # the fetch succeeded, so the base ref exists
    if (
        p.bundle_format != MINIROUTER
        and _has_path(run.repo, parent, p.bundle_rel)
        and not _holds_bundle(run.repo, parent, p.bundle_rel, [p.bundle / f for f in _rel_files(p)], p.repo)
    ):
        return fail(
            _taken(p.bundle_rel, parent, p.branch if parent == state.tip else p.base_ref) + "; nothing was changed"
        )

    with tempfile.TemporaryDirectory(prefix="trinity-index-") as d:
        env = {"GIT_INDEX_FILE": str(Path(d) / "index")}
        for name, args in (("index", ("read-tree", parent)), ("add", ("add", "-f", "--", p.bundle_rel))):
            ok, _, s = run.git(name, *args, env=env)
            if not ok:
                return fail(
                    f"`{s.command}` failed ({_last(s.output)}); nothing was changed (a temporary "
                    f"index was used). {again}"
                )
        ok, tree, s = run.git("tree", "write-tree", env=env)
        if not ok:
            return fail(f"`{s.command}` failed ({_last(s.output)}); nothing was changed. {again}")
        ok, added, _ = run.git("diff", "diff-tree", "-r", "--name-only", "--no-commit-id", parent, tree)
    outside = [f for f in added.splitlines() if f and not _under(f, p.bundle_rel)]
    if outside:  # cannot happen with a temp index seeded from the parent; guard the invariant
        return fail(f"the commit would touch {outside[:3]} outside the bundle; nothing was changed")

    if not added.strip():
        if parent != state.tip:
            return fail(f"{p.base_ref} already contains this bundle exactly; nothing to submit")
        commit = parent
        s = run.step("commit", f"(no commit: {p.branch} at {parent[:10]} already holds this bundle)")
        run.finish(s, True, "", time.monotonic(), status="skipped")
        if state.local != commit:  # the fork had it; bring the local branch along
            ok, _, s = run.git(
                "branch",
                "update-ref",
                "-m",
                f"trinity submit {p.bundle_rel}",
                f"refs/heads/{p.branch}",
                commit,
                state.local or ZERO_OID,
            )
            if not ok:
                return fail(f"could not set {p.branch} to {commit[:10]} ({_last(s.output)}). {again}")
    else:
        ok, commit, s = run.git(
            "commit",
            "commit-tree",
            tree,
            "-p",
            parent,
            "-m",
            p.commit_message.rstrip("\n"),
            shown_args=("commit-tree", tree, "-p", parent, "-m", "<the commit message above>"),
        )
        if not ok:
            return fail(f"`git commit-tree` failed ({_last(s.output)}); nothing was changed. {again}")
        ok, _, s = run.git(
            "branch",
            "update-ref",
            "-m",
            f"trinity submit {p.bundle_rel}",
            f"refs/heads/{p.branch}",
            commit,
            state.local or ZERO_OID,
        )
        if not ok:
            return fail(
                f"could not move {p.branch} to the new commit {commit[:10]} ({_last(s.output)}); "
                f"the branch is unchanged (someone moved it meanwhile?). {again}"
            )

    where = f"commit {commit[:10]} is on local branch {p.branch} (your checkout is unchanged)"
    if not p.push:
        return SubmitResult(
            True,
            f"{where}. Push it with: git push {p.remote} {p.branch}; then open {p.compare_url or 'a pull request'}",
            commit=commit,
            branch=p.branch,
            compare_url=p.compare_url,
        )
    ok, _, s = run.git("push", "push", "--porcelain", p.remote, f"refs/heads/{p.branch}:refs/heads/{p.branch}")
    if not ok:
        hint = ""
        if "non-fast-forward" in s.output or "fetch first" in s.output:
            hint = (
                f" The remote branch has commits you do not have: inspect them with "
                f"`git fetch {p.remote} {p.branch} && git log {p.branch}..FETCH_HEAD`."
            )
        return fail(
            f"push to {p.remote} failed ({_last(s.output)}); {where}.{hint} Fix the cause, then "
            f"{again} (it reuses the commit, nothing is committed twice)",
            commit=commit,
        )
    if not p.open_pr:
        return SubmitResult(
            True,
            f"pushed {p.branch} ({commit[:10]}) to {p.remote}; open the PR at {p.compare_url or 'your Git host'}",
            commit=commit,
            branch=p.branch,
            pushed=True,
            compare_url=p.compare_url,
        )
    return _open_pr(p, run, commit, token)


def _open_pr(p: SubmitPlan, run: _Runner, commit: str, token: str | None) -> SubmitResult:
    base = SubmitResult(True, "", commit=commit, branch=p.branch, pushed=True, compare_url=p.compare_url)
    if p.target is None or p.head_owner is None:
        base.message = (
            f"pushed {p.branch} ({commit[:10]}); the remotes are not GitHub URLs, so open the pull request by hand"
        )
        return base
    if not token:
        base.message = (
            f"pushed {p.branch} ({commit[:10]}); ${github.TOKEN_ENV} is not set, so open the PR at {p.compare_url}"
        )
        return base
    s = run.step("pr", f"POST {p.api_url}/repos/{p.target.slug}/pulls (head {p.pr_head}, base {p.base})")
    t0 = time.monotonic()
    try:
        url, created = github.open_pull_request(
            p.api_url, p.target, head=p.pr_head, base=p.base, title=p.pr_title, body=p.pr_body, token=token
        )
    except github.PullRequestError as e:
        run.finish(s, False, str(e), t0)
        return SubmitResult(
            False,
            f"{e}; {p.branch} ({commit[:10]}) is pushed. Open the PR at {p.compare_url}, "
            f"or rerun: {p.continue_command}",
            commit=commit,
            branch=p.branch,
            pushed=True,
            compare_url=p.compare_url,
            continue_command=p.continue_command,
        )
    run.finish(s, True, ("opened " if created else "already open: ") + url, t0)
    base.pr_url = url
    base.message = f"pushed {p.branch} ({commit[:10]}); pull request {'opened' if created else 'already open'}: {url}"
    return base


def _last(text: str) -> str:
    """The line that says why git failed: its last line, with the remote's own reason first
    (a hook's or the host's `remote: …` message says more than "failed to push some refs")."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return "no output"
    remote = [ln.strip() for ln in lines if ln.startswith("remote: ") and ln[8:].strip()]
    return f"{remote[-1]}; {lines[-1]}" if remote and remote[-1] != lines[-1] else lines[-1]


def _record(plan: SubmitPlan, result: SubmitResult) -> None:
    outcome = "pushed" if result.pushed else "committed" if result.ok and result.commit else "failed"
    record_attempt(
        plan, outcome=outcome, commit=result.commit, pushed=result.pushed, pr_url=result.pr_url, message=result.message
    )


def record_attempt(
    plan: SubmitPlan,
    *,
    outcome: str,
    commit: str | None = None,
    pushed: bool = False,
    pr_url: str | None = None,
    message: str = "",
) -> dict[str, Any]:
    """One `submit` line in the submission history (refused attempts are recorded too)."""
    gates = plan.gate_report.statuses() if plan.gate_report else {}
    return plan.history.append(
        "submit",
        miner=plan.miner,
        bundle=str(plan.bundle),
        bundle_hash=plan.bundle_hash,
        format=plan.bundle_format,
        gates=gates,
        skip_gates=plan.skip_gates,
        outcome=outcome,
        pushed=pushed,
        commit=commit,
        branch=plan.branch,
        remote=plan.remote,
        pr_url=pr_url,
        compare_url=plan.compare_url,
        message=message[:500],
    )
