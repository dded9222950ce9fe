"""Carry out a Plan (events.py) against one repository.

The pipeline is passed in as two functions, so the bot can be tested without it and the pipeline
without GitHub (pipeline.Pipeline has both):
  port(command, sources, ref) -> list[SourceResult] generates on the checkout of `ref`: the command's
    --from, else the launch scripts among `sources` (what a push or the PR changed), else every
    tracked script; for `verify` it collects the ported scripts at `ref`.
  verify(command, results, commit, skip) -> list[SourceResult] runs verification on `commit`, which
    holds the files (the jacamar backend fetches them by commit); `skip` says why it may not run.
"""

from __future__ import annotations

import os
import re
import secrets
import sys
import traceback
from dataclasses import replace
from datetime import datetime
from typing import Callable, NamedTuple, Optional

import github_action_toolkit as gha
import requests
from github import GithubException
from github.PullRequest import PullRequest
from github.Repository import Repository

from maple_ci.errors import MapleError
from maple_ci.github.approval import (Provenance, approve, approver, fork_source, permission, stamp, stamped,
                                      waiting_note)
from maple_ci.github.body import render_pr_body
from maple_ci.github.checks import conclusion, verify_with_check_runs
from maple_ci.github.commands import BotCommand, authorize, refusal
from maple_ci.github.config import Config, Schedule
from maple_ci.github.delivery import (
    BODY_LIMIT,
    BRANCH_PREFIX,
    SourceResult,
    log_annotations,
    open_pr,
    react,
    truncate,
    write_job_summary,
)
from maple_ci.github.events import Plan
from maple_ci.github.markdown import code, log_safe
from maple_ci.github.publish import AUTOMATIC, propose_fixes, publish, set_ignored
from maple_ci.github.report import report_error, sync_report
from maple_ci.github.state import State, read_state

PortFn = Callable[[BotCommand, tuple[str, ...], str], list[SourceResult]]
# verify(command, results, commit, skip, progress): progress(result, cluster result) as each run starts and ends
VerifyFn = Callable[[BotCommand, list[SourceResult], str, Optional[str], Optional[Callable]], list[SourceResult]]


class Done(NamedTuple):
    results: list[SourceResult]  # [] when nothing was run
    pr: PullRequest | None = None  # the PR opened or updated, if any


def results_as_given(command: BotCommand, results: list[SourceResult], commit: str, skip: str | None,
                     progress: Callable | None = None) -> list[SourceResult]:
    """A VerifyFn for port functions whose results already carry their verification."""
    return results


def run_plan(repo: Repository, plan: Plan, port: PortFn, verify: VerifyFn = results_as_given,
             report: Schedule | None = None, settings: Config | None = None) -> Done:
    """Do what the plan says. `report`: where the nightly report issue goes (plans with `report` set),
    by default the settings' (.github/maple.yml); push and nightly errors are posted there too.

    Whatever fails (a MapleError, GitHub answering 5xx, a bug) is answered where the request came
    from, with the comment reacted "confused" and a link to the run, then raised as a MapleError."""
    print(f"maple: {log_safe(plan.reason)}", flush=True)
    settings = settings or Config()
    report = report if report is not None else settings.schedule
    if _left_alone(plan, settings):
        return Done([])
    comment = repo.get_issue(plan.issue_number).get_comment(plan.comment_id) if plan.comment_id else None  # lazy: no request
    try:
        if not _answered_first(repo, plan, comment):
            return Done([])
        assert plan.command is not None
        return _run(repo, plan, plan.command, comment, port, verify, report, settings)
    except Exception as error:
        failure = _failed(repo, plan, comment, error, report)
        if failure is error:
            raise
        raise failure from error


def _left_alone(plan: Plan, settings: Config) -> bool:
    """Nothing to run or say, or a push while refresh_on_push is off."""
    if plan.command is None and plan.reply is None:
        return True
    if plan.trigger == "push" and not settings.refresh_on_push:
        print("maple: refresh_on_push is off in .github/maple.yml; the push is left alone", flush=True)
        return True
    return False


def _answered_first(repo: Repository, plan: Plan, comment) -> bool:
    """Refuse an actor without write access, react to the comment, post a plan's fixed reply;
    whether a command is still to run."""
    if plan.actor is not None and not authorize(plan.association or "", permission(repo, plan.actor)):
        print(f"maple: {plan.actor} has no write access; refused", flush=True)
        _reply(repo, plan, refusal(plan.actor))
        return False
    if comment is not None and plan.reaction:
        react(comment, plan.reaction)
    if plan.reply is not None:
        _reply(repo, plan, plan.reply)
        return False
    return True


class Target(NamedTuple):
    """What a request acts on: the bot's branch maple/port-<key> into `base`, ported from `ref`."""

    key: str
    base: str
    ref: str
    sources: tuple[str, ...]
    origin: str  # the repository the scripts come from (a fork's for a fork's PR)
    fork_head: str | None  # a fork PR's head commit


def _run(repo: Repository, plan: Plan, command: BotCommand, comment, port: PortFn, verify: VerifyFn,
         report: Schedule | None, settings: Config) -> Done:
    if command.name == "approve":
        assert command.sha is not None
        return _answered(repo, plan, comment, approve(repo, command.sha, plan.actor or os.environ.get("GITHUB_ACTOR", "")))
    target = _target(repo, plan, command)
    if command.name in ("ignore", "unignore"):
        return _answered(repo, plan, comment, set_ignored(repo, target.key, target.base, command))
    command, sources, left_out = _narrowed(repo, command, target, settings)
    approvals: dict[str, str | None] = {}
    gha.start_group(f"maple {command.name} {' '.join(command.clusters)}".rstrip())
    try:
        results = port(command, sources, target.ref)
        gated = _gate(repo, command, target, approvals, verify)
        results, message, pr = _deliver(repo, plan, command, target, results, gated, settings)
        if plan.report and report is not None:
            sync_report(repo, report, results, commit_sha(repo, target.ref))
    finally:
        gha.end_group()  # also on failure: the error must not be folded away in the log
    message += _afterword(approvals, left_out)
    _conclude(repo, plan, comment, results, message)
    return Done(results, pr)


def _gate(repo: Repository, command: BotCommand, target: Target, approvals: dict[str, str | None], verify: VerifyFn):
    """verify(results, sha) with check runs on `sha`, running only what an approval lets run
    (approvals: each fork commit met, and who approved it, None while it waits)."""
    skip = None if command.verify else "`--no-verify` was given"

    def gated(found: list[SourceResult], sha: str) -> list[SourceResult]:
        return verify_with_check_runs(repo, sha, found, lambda found, progress: _verify_approved(
            repo, found, skip, target.fork_head, approvals, lambda run, why: verify(command, run, sha, why, progress)))
    return gated


def _deliver(repo: Repository, plan: Plan, command: BotCommand, target: Target, results: list[SourceResult],
             gated, settings: Config) -> tuple[list[SourceResult], str, PullRequest | None]:
    """A port: published as a PR. A verify: the scripts at the ref verified in place (nightly: the
    passing fixes proposed). The results, the reply and the PR."""
    if command.name == "port":
        source = Provenance(target.origin, commit_sha(repo, target.ref), plan.request or plan.reason)
        if target.fork_head is None:
            _stamp_fork_content(repo, results, source.commit, source.request)
        return publish(repo, replace(plan, key=target.key), command, results, target.base, source,
                       target.fork_head is not None, gated, settings)
    results = gated(results, commit_sha(repo, target.ref))
    if plan.report:
        propose_fixes(repo, target.base, results, settings)
    return results, render_pr_body(results), None


def _afterword(approvals: dict[str, str | None], left_out: tuple[str, ...]) -> str:
    """What the reply adds: fork commits waiting for an approval, scripts ignored here."""
    text = ""
    waiting = sorted({sha for sha, who in approvals.items() if who is None})
    if waiting:
        text += "\n\n" + "\n".join(f"**{waiting_note(sha)}**" for sha in waiting)
    if left_out:
        text += f"\n\nNot ported, ignored here: {', '.join(map(code, left_out))} ({code('/maple unignore ' + ' '.join(left_out))} undoes it)."
    return text


def _conclude(repo: Repository, plan: Plan, comment, results: list[SourceResult], message: str) -> None:
    """Annotations, the comment's reaction, the reply and the job summary."""
    log_annotations(results)
    if comment is not None:
        react(comment, "confused" if any(conclusion(c) == "failure" for r in results for c in r["clusters"]) else "rocket")
    if plan.issue_number is not None:
        _reply(repo, plan, message)
    write_job_summary(render_pr_body(results))


def _stamp_fork_content(repo: Repository, results: list[SourceResult], ref: str, request: str) -> None:
    """Ports of a script a fork wrote (a merged PR's, or a fork's port ported again) carry that fork
    commit's stamp, as a fork PR's own ports do: verified, now and nightly, only once it is approved."""
    for result in results:
        merged = fork_source(repo, result["source"], ref, request)
        for c in result["clusters"] if merged else ():
            c["content"] = stamp(c["content"], merged)


def _answered(repo: Repository, plan: Plan, comment, message: str) -> Done:
    """A request done without porting (approve, ignore): rocket, and the reply."""
    if comment is not None:
        react(comment, "rocket")
    _reply(repo, plan, message)
    return Done([])


def _target(repo: Repository, plan: Plan, command: BotCommand) -> Target:
    """The request's branch, base and source. On a PR: its head, and its branch as the base (a fork's
    branch cannot take a PR from here: then the PR's base). A comment on the bot's own PR acts on
    the request that made it."""
    key, base, ref, sources = plan.key or "", plan.base or "", plan.ref or "", plan.sources
    if plan.pull_number is None:
        return Target(key, base, ref, sources, repo.full_name, None)
    pr = repo.get_pull(plan.pull_number)
    own = _bot_key(repo, pr) if command.name != "verify" else None  # verify: the bot PR's head holds the ports
    if own is not None and not own.startswith("pr-"):
        return Target(own, pr.base.ref, pr.base.ref, sources, repo.full_name, None)
    if own is not None:  # the bot's PR for a source PR: act on that PR
        key, pr = own, repo.get_pull(int(own.removeprefix("pr-")))
    return _pr_target(repo, pr, command, plan.requested_at, (key, sources))


def _pr_target(repo: Repository, pr: PullRequest, command: BotCommand, requested_at: str | None,
               asked: tuple[str, tuple[str, ...]]) -> Target:
    """The target of a request on source PR `pr`: its pinned head; its branch as the base, or for a
    fork, the PR's base. `asked`: the request key and sources."""
    key, sources = asked
    ref = _pinned_head(repo, pr, command, requested_at)
    same_repo = pr.head.repo is not None and pr.head.repo.full_name == repo.full_name
    origin = repo.full_name if same_repo else (pr.head.repo.full_name if pr.head.repo else "unknown/deleted-fork")
    if command.name == "port" and command.source is None:
        # What the PR changes is what to port; the pipeline keeps the launch scripts among them.
        sources = tuple(f.filename for f in pr.get_files() if f.status != "removed")
    return Target(key, pr.head.ref if same_repo else pr.base.ref, ref, sources, origin, None if same_repo else ref)


def _bot_key(repo: Repository, pr: PullRequest) -> str | None:
    """The request key of one of the bot's own PRs (branch maple/port-<key> in this repository)."""
    head = pr.head
    if head.repo is None or head.repo.full_name != repo.full_name or not head.ref.startswith(BRANCH_PREFIX):
        return None
    key = head.ref.removeprefix(BRANCH_PREFIX)
    return key if re.fullmatch(r"pr-[0-9]+|(issue|branch)-[A-Za-z0-9_-]+", key) else None


def _recreated(command: BotCommand, target: Target, state: State) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The clusters and sources asked for; `/maple recreate` without them takes the PR's."""
    clusters, sources = command.clusters, target.sources
    if not command.recreate:
        return clusters, sources
    clusters = clusters or tuple(dict.fromkeys(c["cluster"] for r in state.results for c in r["clusters"]))
    sources = sources or tuple(r["source"] for r in state.results)
    if not clusters:
        raise MapleError("Nothing to recreate here: name the clusters, e.g. `/maple recreate perlmutter`.", exit_code=2)
    return clusters, sources


def _not_ignored(command: BotCommand, clusters: tuple[str, ...], sources: tuple[str, ...], skip: set[str]) -> tuple[str, ...]:
    """The sources not ignored; refused when everything asked for is."""
    if command.source in skip or not set(clusters) - skip:
        raise MapleError(f"Everything asked for is ignored here ({', '.join(map(code, sorted(skip)))}): "
                         "`/maple unignore` undoes it.", exit_code=2)
    kept = tuple(s for s in sources if s not in skip)
    if sources and not kept:  # no sources would mean every tracked script
        raise MapleError(f"Every script asked for is ignored here ({', '.join(map(code, sources))}): "
                         "`/maple unignore` undoes it.", exit_code=2)
    return kept


def _narrowed(repo: Repository, command: BotCommand, target: Target, settings: Config,
              ) -> tuple[BotCommand, tuple[str, ...], tuple[str, ...]]:
    """The command and sources without what is ignored (settings, `/maple ignore`), and what was
    left out; `/maple recreate` without clusters takes the PR's, and its scripts when none is named."""
    if command.name != "port":
        return command, target.sources, ()
    existing = open_pr(repo, target.key, target.base)
    state = read_state(existing.body if existing else None)
    clusters, sources = _recreated(command, target, state)
    skip = set(settings.ignore) | set(state.ignore)
    kept = _not_ignored(command, clusters, sources, skip)
    command = replace(command, clusters=tuple(c for c in clusters if c not in skip))
    return command, kept, tuple(c for c in clusters if c in skip)


def _pinned_head(repo: Repository, pr: PullRequest, command: BotCommand, requested_at: str | None) -> str:
    """The PR head to port: the one the comment pinned (`@sha`), or, for a fork's PR, the head only
    if the fork was last pushed before the comment. A fork can push while the job waits in the
    queue; the maintainer asked about what they saw. The push time is GitHub's (the fork's
    `pushed_at`), not the committer date, which whoever commits sets."""
    head = pr.head.sha
    if command.name != "port":
        return head
    if command.sha is not None:
        if not head.startswith(command.sha):
            raise MapleError(f"The PR head is now `{head}`, not `{command.sha}`: review it, then ask again with "
                             f"{code(replace(command, sha=head).text())}", exit_code=2)
        return head
    fork = pr.head.repo
    if fork is None or fork.full_name == repo.full_name or not requested_at:
        return head  # a deleted fork pushes nothing; a same-repository head is pushed by people with write access
    if fork.pushed_at is None or fork.pushed_at > datetime.fromisoformat(requested_at.replace("Z", "+00:00")):
        raise MapleError(f"The PR head `{head}` was pushed after this request; review it, then ask again with "
                         f"{code(replace(command, sha=head).text())} (its `@{head}` ports exactly that commit).", exit_code=2)
    return head


def _verify_approved(repo: Repository, results: list[SourceResult], skip: str | None, fork_head: str | None,
                     approvals: dict[str, str | None],
                     verify: Callable[[list[SourceResult], str | None], list[SourceResult]]) -> list[SourceResult]:
    """`results` verified, except those made from a fork's commit no maintainer approved: these are
    skipped, saying why, and never reach `verify` (so no backend runs them). `approvals` collects
    {fork commit: approver or None}."""
    if skip is not None:
        return verify(results, skip)
    held: dict[int, str] = {}
    for i, result in enumerate(results):
        source = fork_head or _fork_commit(repo, result)
        if source is not None:
            if source not in approvals:
                approvals[source] = approver(repo, source)
            if approvals[source] is None:
                held[i] = source
    allowed = [r for i, r in enumerate(results) if i not in held]
    verified = iter(verify(allowed, None) if allowed else [])
    for i, source in held.items():
        for c in results[i]["clusters"]:
            c.update(verification="skipped", note=waiting_note(source))
    return [results[i] if i in held else next(verified) for i in range(len(results))]


def _fork_commit(repo: Repository, result: SourceResult) -> str | None:
    """The fork commit a ported script at a trusted ref was made from (its stamp), if any."""
    for c in result["clusters"]:
        found = stamped(c["content"])
        if found is not None and found[0] != repo.full_name:
            return found[1]
    return None


def commit_sha(repo: Repository, ref: str) -> str:
    if re.fullmatch(r"[0-9a-f]{40}", ref):
        return ref
    return repo.get_git_ref(f"heads/{ref}").object.sha


def _failed(repo: Repository, plan: Plan, comment, error: Exception, report: Schedule | None) -> MapleError:
    """Say in the thread (a push's or nightly's: the report issue) that the request failed and why,
    with the run's log; the error to end the job with. Reporting is best effort: GitHub may be what failed."""
    if isinstance(error, MapleError):
        reason, code = str(error), error.exit_code
    else:
        code = 1
        if isinstance(error, GithubException):
            reason = f"GitHub answered {error.status}"
        elif isinstance(error, requests.RequestException):  # also 5xx still failing after every retry
            reason = f"GitHub could not be reached or kept failing after retries ({type(error).__name__})"
        else:
            reason = f"an unexpected {type(error).__name__} (the run's log has the details)"
        token = secrets.token_hex(16)  # nothing in a traceback may act as a workflow command
        print(f"::stop-commands::{token}", flush=True)
        traceback.print_exception(error, file=sys.stdout)  # stdout: in order with the markers
        print(f"::{token}::", flush=True)
    name = plan.command.name if plan.command else "answer"
    run = run_url()
    fence = "`" * max(3, max((len(r) for r in re.findall(r"`+", reason)), default=0) + 1)
    text = f"maple-ci could not {name}:\n\n{fence}text\n{reason}\n{fence}" + (f"\n\nLog: {run}" if run else "")
    try:
        if comment is not None:
            react(comment, "confused")
        if plan.issue_number is None and plan.trigger in AUTOMATIC and report is not None:
            report_error(repo, report, f"On {plan.trigger} ({plan.request or plan.reason}): {text}")
        _reply(repo, plan, text)
    except Exception as again:  # noqa: BLE001 - the original error is the one to report
        print(f"maple: could not report the failure in the thread: {log_safe(again)}", flush=True)
    return error if isinstance(error, MapleError) and "\n" not in str(error) else MapleError(log_safe(reason), exit_code=code)


def run_url() -> str | None:
    """This workflow run's page, from the variables Actions sets; None outside Actions."""
    parts = [os.environ.get(name) for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    return f"{parts[0]}/{parts[1]}/actions/runs/{parts[2]}" if all(parts) else None


def _reply(repo: Repository, plan: Plan, text: str) -> None:
    """Answer where the request came from: the issue or PR, else the job summary."""
    if plan.issue_number is not None:
        repo.get_issue(plan.issue_number).create_comment(truncate(text, BODY_LIMIT))
    else:
        write_job_summary(text)
