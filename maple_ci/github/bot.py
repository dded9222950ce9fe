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

import re
from typing import Callable, NamedTuple, Optional

import github_action_toolkit as gha
from github import UnknownObjectException
from github.PullRequest import PullRequest
from github.Repository import Repository

from maple_ci.errors import MapleError
from maple_ci.github.commands import Command, authorize, refusal
from maple_ci.github.config import Schedule
from maple_ci.github.delivery import (
    PortResult,
    check_runs,
    deliver,
    edit_pr,
    log_annotations,
    post_review,
    react,
    render_pr_body,
    write_job_summary,
)
from maple_ci.github.events import Plan
from maple_ci.github.report import sync_report

PortFn = Callable[[Command, tuple[str, ...], str], list[PortResult]]
VerifyFn = Callable[[Command, list[PortResult], str, Optional[str]], list[PortResult]]
FORK = "the PR comes from a fork, and maple-ci never runs a fork's code"


class Done(NamedTuple):
    results: list[PortResult]  # [] when nothing was run
    pr: PullRequest | None = None  # the PR opened or updated, if any


def results_as_given(command: Command, results: list[PortResult], commit: str, skip: str | None) -> list[PortResult]:
    """A VerifyFn for port functions whose results already carry their verification."""
    return results


def run_plan(repo: Repository, plan: Plan, port: PortFn, verify: VerifyFn = results_as_given,
             report: Schedule | None = None) -> Done:
    """Do what the plan says.
    `report`: where the nightly report issue goes (plans with `report` set)."""
    print(f"maple: {plan.reason}", flush=True)
    if plan.command is None and plan.reply is None:
        return Done([])
    if plan.actor is not None and not authorize(plan.association or "", permission(repo, plan.actor)):
        print(f"maple: {plan.actor} has no write access; refused", flush=True)
        _reply(repo, plan, refusal(plan.actor))
        return Done([])
    comment = repo.get_issue(plan.issue_number).get_comment(plan.comment_id) if plan.comment_id else None
    if comment is not None and plan.reaction:
        react(comment, plan.reaction)
    if plan.reply is not None:
        _reply(repo, plan, plan.reply)
        return Done([])
    assert plan.command is not None
    base, ref, sources = plan.base, plan.ref, plan.sources
    command = plan.command
    skip = None if command.verify else "`--no-verify` was given"
    if plan.pull_number is not None:
        pr = repo.get_pull(plan.pull_number)
        ref = pr.head.sha
        # Propose the ports into the PR's own branch, so merging both lands them together; a fork's
        # branch cannot take a PR from here, so then the PR's base takes it.
        same_repo = pr.head.repo is not None and pr.head.repo.full_name == repo.full_name
        base = pr.head.ref if same_repo else pr.base.ref
        skip = skip if same_repo else FORK
        if command.name == "port" and command.source is None:
            # What the PR changes is what to port; the pipeline keeps the launch scripts among them.
            sources = tuple(f.filename for f in pr.get_files() if f.status != "removed")
    assert base is not None and ref is not None
    try:
        gha.start_group(f"maple {command.name} {' '.join(command.clusters)}".rstrip())
        try:
            results = port(command, sources, ref)
            results, message, pr = _publish(repo, plan, command, results, base, ref, lambda r, sha: verify(command, r, sha, skip))
            if plan.report and report is not None:
                sync_report(repo, report, results, commit_sha(repo, ref))
        finally:
            gha.end_group()  # also on failure: the error must not be folded away in the log
    except MapleError as error:
        if comment is not None:
            react(comment, "confused")
        _reply(repo, plan, f"maple-ci could not {command.name}:\n\n{error}")
        raise
    log_annotations(results)
    if comment is not None:
        react(comment, "rocket")
    if plan.issue_number is not None:
        repo.get_issue(plan.issue_number).create_comment(message)
    write_job_summary(render_pr_body(results))
    return Done(results, pr)


def _publish(repo: Repository, plan: Plan, command: Command, results: list[PortResult], base: str, ref: str,
             verify: Callable[[list[PortResult], str], list[PortResult]]) -> tuple[list[PortResult], str, PullRequest | None]:
    """Deliver a port (PR, verification, review, check runs) or verify ported scripts; the results and the reply."""
    if command.name != "port":
        sha = commit_sha(repo, ref)
        results = verify(results, sha)
        check_runs(repo, sha, results)
        return results, render_pr_body(results), None
    assert plan.key is not None
    files = {c["path"]: c["content"] for r in results for c in r["clusters"]}
    sources = ", ".join(sorted({r["source"] for r in results}))
    title = f"maple: port {sources} to {', '.join(command.clusters)}"
    delivered = deliver(repo, plan.key, files, base, title, render_pr_body(results))
    if delivered.pr is None:
        return results, f"The ported scripts are already on `{base}`; no PR needed.", None
    if not delivered.committed:
        # The branch already holds these files, verified, with their review and check runs.
        return results, f"Ported in {delivered.pr.html_url} (unchanged)", delivered.pr
    results = verify(results, delivered.sha)
    edit_pr(delivered.pr, title, render_pr_body(results))
    post_review(delivered.pr, delivered.sha, [s for r in results for c in r["clusters"] for s in c["suggestions"]])
    check_runs(repo, delivered.sha, results)
    return results, f"Ported in {delivered.pr.html_url}", delivered.pr


def permission(repo: Repository, login: str) -> str | None:
    """The user's permission on the repository (admin/write/read/none); None for an unknown user."""
    try:
        return repo.get_collaborator_permission(login)
    except UnknownObjectException:
        return None


def commit_sha(repo: Repository, ref: str) -> str:
    if re.fullmatch(r"[0-9a-f]{40}", ref):
        return ref
    return repo.get_git_ref(f"heads/{ref}").object.sha


def _reply(repo: Repository, plan: Plan, text: str) -> None:
    """Answer where the request came from: the issue or PR, else the job summary."""
    if plan.issue_number is not None:
        repo.get_issue(plan.issue_number).create_comment(text)
    else:
        write_job_summary(text)
