"""Carry out a Plan (events.py) against one repository.

The port pipeline is passed in as a function, so the bot can be tested without it and the
pipeline without GitHub: port(command, sources, ref) -> list[PortResult] runs on the checkout of
`ref`; `sources` empty means the command's --from, or every tracked script when that is None.
"""

from __future__ import annotations

import re
from typing import Callable

from github import UnknownObjectException
from github.Repository import Repository

from maple_ci.errors import MapleError
from maple_ci.github.commands import Command, authorize
from maple_ci.github.delivery import (
    PortResult,
    check_runs,
    deliver,
    post_review,
    react,
    render_pr_body,
    write_job_summary,
)
from maple_ci.github.events import Plan

PortFn = Callable[[Command, tuple[str, ...], str], list[PortResult]]


def run_plan(repo: Repository, plan: Plan, port: PortFn, summary_path: str | None = None) -> list[PortResult]:
    """Do what the plan says; the port results, or [] when nothing was run."""
    print(f"maple: {plan.reason}", flush=True)
    if plan.command is None and plan.reply is None:
        return []
    if plan.actor is not None and not authorize(plan.association or "", permission(repo, plan.actor)):
        # Silence, not a reply: anyone can comment, and the bot must not be a way to spam a PR.
        print(f"maple: {plan.actor} has no write access; nothing done", flush=True)
        return []
    comment = repo.get_issue(plan.issue_number).get_comment(plan.comment_id) if plan.comment_id else None
    if comment is not None and plan.reaction:
        react(comment, plan.reaction)
    if plan.reply is not None:
        _reply(repo, plan, plan.reply, summary_path)
        return []
    assert plan.command is not None
    base, ref = plan.base, plan.ref
    if plan.pull_number is not None:
        pr = repo.get_pull(plan.pull_number)
        ref = pr.head.sha
        # Propose the ports into the PR's own branch, so merging both lands them together; a fork's
        # branch cannot take a PR from here, so then the PR's base takes it.
        same_repo = pr.head.repo is not None and pr.head.repo.full_name == repo.full_name
        base = pr.head.ref if same_repo else pr.base.ref
    assert base is not None and ref is not None
    try:
        results = port(plan.command, plan.sources, ref)
        message = _publish(repo, plan, plan.command, results, base, ref)
    except MapleError as error:
        if comment is not None:
            react(comment, "confused")
        _reply(repo, plan, f"maple-ci could not {plan.command.name}:\n\n{error}", summary_path)
        raise
    if comment is not None:
        react(comment, "rocket")
    if plan.issue_number is not None:
        repo.get_issue(plan.issue_number).create_comment(message)
    write_job_summary(render_pr_body(results), summary_path)
    return results


def _publish(repo: Repository, plan: Plan, command: Command, results: list[PortResult], base: str, ref: str) -> str:
    """Deliver a port (PR, review, check runs) or report a verification; the reply text."""
    body = render_pr_body(results)
    if command.name != "port":
        check_runs(repo, commit_sha(repo, ref), results)
        return body
    assert plan.key is not None
    files = {c["path"]: c["content"] for r in results for c in r["clusters"]}
    sources = ", ".join(sorted({r["source"] for r in results}))
    title = f"maple: port {sources} to {', '.join(command.clusters)}"
    delivered = deliver(repo, plan.key, files, base, title, body)
    if delivered.pr is None:
        return f"The ported scripts are already on `{base}`; no PR needed."
    # An unchanged branch already carries this review and these check runs.
    if delivered.committed:
        post_review(delivered.pr, delivered.sha, [s for r in results for c in r["clusters"] for s in c["suggestions"]])
        check_runs(repo, delivered.sha, results)
    return f"Ported in {delivered.pr.html_url}" + ("" if delivered.committed else " (unchanged)")


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


def _reply(repo: Repository, plan: Plan, text: str, summary_path: str | None) -> None:
    """Answer where the request came from: the issue or PR, else the job summary."""
    if plan.issue_number is not None:
        repo.get_issue(plan.issue_number).create_comment(text)
    else:
        write_job_summary(text, summary_path)
