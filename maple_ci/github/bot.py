"""Carry out a Plan (events.py) against one repository.

The pipeline is passed in as two functions, so the bot can be tested without it and the pipeline
without GitHub (pipeline.Pipeline has both):
  port(command, sources, ref) -> list[PortResult] generates on the checkout of `ref`: the command's
    --from, else the launch scripts among `sources` (what a push or the PR changed), else every
    tracked script; for `verify` it collects the ported scripts at `ref`.
  verify(command, results, commit, skip) -> list[PortResult] runs verification on `commit`, which
    holds the files (the jacamar backend fetches them by commit); `skip` says why it may not run.
"""

from __future__ import annotations

import os
import re
import secrets
import sys
import traceback
from datetime import datetime
from typing import Callable, NamedTuple, Optional

import github_action_toolkit as gha
import requests
from github import GithubException
from github.PullRequest import PullRequest
from github.Repository import Repository

from maple_ci.errors import MapleError
from maple_ci.github.approval import Provenance, approve, approver, permission, stamp, stamped, trailers, waiting_note
from maple_ci.github.body import describe, previous_results, render_pr_body, title_for
from maple_ci.github.checks import verified, verify_with_check_runs
from maple_ci.github.commands import Command, authorize, refusal
from maple_ci.github.config import Schedule
from maple_ci.github.delivery import (
    BODY_LIMIT,
    PortResult,
    deliver,
    edit_pr,
    log_annotations,
    open_pr,
    post_review,
    react,
    truncate,
    write_job_summary,
)
from maple_ci.github.events import Plan
from maple_ci.github.markdown import log_safe
from maple_ci.github.report import sync_report

PortFn = Callable[[Command, tuple[str, ...], str], list[PortResult]]
# verify(command, results, commit, skip, progress): progress(result, cluster result) as each run starts and ends
VerifyFn = Callable[[Command, list[PortResult], str, Optional[str], Optional[Callable]], list[PortResult]]


class Done(NamedTuple):
    results: list[PortResult]  # [] when nothing was run
    pr: PullRequest | None = None  # the PR opened or updated, if any


def results_as_given(command: Command, results: list[PortResult], commit: str, skip: str | None,
                     progress: Callable | None = None) -> list[PortResult]:
    """A VerifyFn for port functions whose results already carry their verification."""
    return results


def run_plan(repo: Repository, plan: Plan, port: PortFn, verify: VerifyFn = results_as_given,
             report: Schedule | None = None) -> Done:
    """Do what the plan says. `report`: where the nightly report issue goes (plans with `report` set).

    Whatever fails (a MapleError, GitHub answering 5xx, a bug) is answered where the request came
    from, with the comment reacted "confused" and a link to the run, then raised as a MapleError."""
    print(f"maple: {log_safe(plan.reason)}", flush=True)
    if plan.command is None and plan.reply is None:
        return Done([])
    comment = repo.get_issue(plan.issue_number).get_comment(plan.comment_id) if plan.comment_id else None  # lazy: no request
    try:
        if plan.actor is not None and not authorize(plan.association or "", permission(repo, plan.actor)):
            print(f"maple: {plan.actor} has no write access; refused", flush=True)
            _reply(repo, plan, refusal(plan.actor))
            return Done([])
        if comment is not None and plan.reaction:
            react(comment, plan.reaction)
        if plan.reply is not None:
            _reply(repo, plan, plan.reply)
            return Done([])
        assert plan.command is not None
        return _run(repo, plan, plan.command, comment, port, verify, report)
    except Exception as error:
        failure = _failed(repo, plan, comment, error)
        if failure is error:
            raise
        raise failure from error


def _run(repo: Repository, plan: Plan, command: Command, comment, port: PortFn, verify: VerifyFn,
         report: Schedule | None) -> Done:
    if command.name == "approve":
        assert command.sha is not None
        message = approve(repo, command.sha, plan.actor or os.environ.get("GITHUB_ACTOR", ""))
        if comment is not None:
            react(comment, "rocket")
        _reply(repo, plan, message)
        return Done([])
    base, ref, sources = plan.base, plan.ref, plan.sources
    skip = None if command.verify else "`--no-verify` was given"
    origin, fork_head = repo.full_name, None
    if plan.pull_number is not None:
        pr = repo.get_pull(plan.pull_number)
        ref = _pinned_head(repo, pr, command, plan.requested_at)
        # Propose the ports into the PR's own branch, so merging both lands them together; a fork's
        # branch cannot take a PR from here, so then the PR's base takes it.
        same_repo = pr.head.repo is not None and pr.head.repo.full_name == repo.full_name
        base = pr.head.ref if same_repo else pr.base.ref
        if not same_repo:
            origin, fork_head = (pr.head.repo.full_name if pr.head.repo else "unknown/deleted-fork"), ref
        if command.name == "port" and command.source is None:
            # What the PR changes is what to port; the pipeline keeps the launch scripts among them.
            sources = tuple(f.filename for f in pr.get_files() if f.status != "removed")
    assert base is not None and ref is not None
    gha.start_group(f"maple {command.name} {' '.join(command.clusters)}".rstrip())
    try:
        results = port(command, sources, ref)
        source = Provenance(origin, commit_sha(repo, ref), plan.request or plan.reason) if command.name == "port" else None
        approvals: dict[str, str | None] = {}

        def gated(found: list[PortResult], sha: str) -> list[PortResult]:
            return verify_with_check_runs(repo, sha, found, lambda found, progress: _verify_approved(
                repo, found, skip, fork_head, approvals, lambda run, why: verify(command, run, sha, why, progress)))

        results, message, pr = _publish(repo, plan, command, results, base, ref, source, fork_head is not None, gated)
        if plan.report and report is not None:
            sync_report(repo, report, results, commit_sha(repo, ref))
    finally:
        gha.end_group()  # also on failure: the error must not be folded away in the log
    waiting = sorted({sha for sha, who in approvals.items() if who is None})
    if waiting:
        message += "\n\n" + "\n".join(f"**{waiting_note(sha)}**" for sha in waiting)
    log_annotations(results)
    if comment is not None:
        react(comment, "rocket")
    if plan.issue_number is not None:
        _reply(repo, plan, message)
    write_job_summary(render_pr_body(results))
    return Done(results, pr)


def _pinned_head(repo: Repository, pr: PullRequest, command: Command, requested_at: str | None) -> str:
    """The PR head to port: the one the comment pinned (`@sha`), or one committed before the comment.
    A fork can push while the job waits in the queue; the maintainer asked about what they saw.
    (A committer date can be set by whoever commits: the approval of fork SHAs is the guarantee.)"""
    head = pr.head.sha
    if command.name != "port":
        return head
    if command.sha is not None:
        if not head.startswith(command.sha):
            raise MapleError(f"The PR head is now `{head}`, not `{command.sha}`: review it, then ask again "
                             f"with `@{head}`.", exit_code=2)
        return head
    committed = repo.get_git_commit(head).committer.date
    if requested_at and committed > datetime.fromisoformat(requested_at.replace("Z", "+00:00")):
        raise MapleError(f"The PR head `{head}` was committed after this request; review it, then ask again "
                         f"(add `@{head}` to port exactly that commit).", exit_code=2)
    return head


def _verify_approved(repo: Repository, results: list[PortResult], skip: str | None, fork_head: str | None,
                     approvals: dict[str, str | None],
                     verify: Callable[[list[PortResult], str | None], list[PortResult]]) -> list[PortResult]:
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


def _fork_commit(repo: Repository, result: PortResult) -> str | None:
    """The fork commit a ported script at a trusted ref was made from (its stamp), if any."""
    for c in result["clusters"]:
        found = stamped(c["content"])
        if found is not None and found[0] != repo.full_name:
            return found[1]
    return None


def _publish(repo: Repository, plan: Plan, command: Command, results: list[PortResult], base: str, ref: str,
             source: Provenance | None, from_fork: bool, verify: Callable[[list[PortResult], str], list[PortResult]],
             ) -> tuple[list[PortResult], str, PullRequest | None]:
    """Deliver a port (PR, verification, review, check runs) or verify ported scripts; the results and the reply.
    `verify(results, commit)` verifies with check runs on `commit`."""
    if command.name != "port":
        results = verify(results, commit_sha(repo, ref))
        return results, render_pr_body(results), None
    assert plan.key is not None and source is not None
    for result in results:
        result["provenance"] = source._asdict()
        if from_fork:  # what verification reads back, wherever the file goes
            for c in result["clusters"]:
                c["content"] = stamp(c["content"], source)
    files = {c["path"]: c["content"] for r in results for c in r["clusters"]}
    existing = open_pr(repo, plan.key, base)
    earlier = previous_results(existing.body if existing else None)
    title = title_for(earlier, results)
    delivered = deliver(repo, plan.key, files, base, title, describe(earlier, results), trailers(source))
    if delivered.pr is None:
        return results, f"The ported scripts are already on `{base}`; no PR needed.", None
    if not delivered.committed and verified(repo, delivered.sha):
        # The branch already holds these files, verified, with their review and check runs.
        return results, f"Ported in {delivered.pr.html_url} (unchanged)", delivered.pr
    results = verify(results, delivered.sha)
    edit_pr(delivered.pr, title, describe(earlier, results))
    post_review(delivered.pr, delivered.sha, [s for r in results for c in r["clusters"] for s in c["suggestions"]])
    return results, f"Ported in {delivered.pr.html_url}", delivered.pr


def commit_sha(repo: Repository, ref: str) -> str:
    if re.fullmatch(r"[0-9a-f]{40}", ref):
        return ref
    return repo.get_git_ref(f"heads/{ref}").object.sha


def _failed(repo: Repository, plan: Plan, comment, error: Exception) -> MapleError:
    """Say in the thread (or the job summary) that the request failed and why, with the run's log;
    the error to end the job with. Reporting is best effort: GitHub may be what failed."""
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
