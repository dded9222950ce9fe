"""Answering where a request came from: the reply, and when a request fails, why and the run's log."""

from __future__ import annotations

import os
import secrets
import sys
import traceback

import requests
from github import GithubException
from github.Repository import Repository

from maple_ci.errors import MapleError
from maple_ci.github.config import Schedule
from maple_ci.github.delivery import BODY_LIMIT, react, truncate, write_job_summary
from maple_ci.github.events import Plan
from maple_ci.github.markdown import block_fence, log_safe
from maple_ci.github.publish import AUTOMATIC
from maple_ci.github.report import report_error


def reply(repo: Repository, plan: Plan, text: str) -> None:
    """Answer where the request came from: the issue or PR, else the job summary."""
    if plan.issue_number is not None:
        repo.get_issue(plan.issue_number).create_comment(truncate(text, BODY_LIMIT))
    else:
        write_job_summary(text)


def run_url() -> str | None:
    """This workflow run's page, from the variables Actions sets; None outside Actions."""
    parts = [os.environ.get(name) for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    return f"{parts[0]}/{parts[1]}/actions/runs/{parts[2]}" if all(parts) else None


def failed(repo: Repository, plan: Plan, comment, error: Exception, report: Schedule | None) -> MapleError:
    """Say in the thread (a push's or nightly's: the report issue) that the request failed and why,
    with the run's log; the error to end the job with. Reporting is best effort: GitHub may be what failed."""
    reason, code = _reason(error)
    _report_failure(repo, plan, comment, report, _failure_text(plan, reason))
    return error if isinstance(error, MapleError) and "\n" not in str(error) else MapleError(log_safe(reason), exit_code=code)


def _reason(error: Exception) -> tuple[str, int]:
    """Why the request failed, for the thread, and the exit code; an error that is not maple-ci's
    own has its traceback in the log."""
    if isinstance(error, MapleError):
        return str(error), error.exit_code
    reason = _unexpected(error)
    token = secrets.token_hex(16)  # nothing in a traceback may act as a workflow command
    print(f"::stop-commands::{token}", flush=True)
    traceback.print_exception(error, file=sys.stdout)  # stdout: in order with the markers
    print(f"::{token}::", flush=True)
    return reason, 1


def _unexpected(error: Exception) -> str:
    if isinstance(error, GithubException):
        return f"GitHub answered {error.status}"
    if isinstance(error, requests.RequestException):  # also 5xx still failing after every retry
        return f"GitHub could not be reached or kept failing after retries ({type(error).__name__})"
    return f"an unexpected {type(error).__name__} (the run's log has the details)"


def _failure_text(plan: Plan, reason: str) -> str:
    """The reply: what could not be done, the reason fenced, the run's log."""
    name = plan.command.name if plan.command else "answer"
    run = run_url()
    fence = block_fence(reason)
    return f"maple-ci could not {name}:\n\n{fence}text\n{reason}\n{fence}" + (f"\n\nLog: {run}" if run else "")


def _report_failure(repo: Repository, plan: Plan, comment, report: Schedule | None, text: str) -> None:
    """The comment reacted "confused", the failure on the report issue (push, nightly) and the reply."""
    try:
        if comment is not None:
            react(comment, "confused")
        if _reported_on_issue(plan, report):
            report_error(repo, report, f"On {plan.trigger} ({plan.request or plan.reason}): {text}")
        reply(repo, plan, text)
    except Exception as again:  # noqa: BLE001 - the original error is the one to report
        print(f"maple: could not report the failure in the thread: {log_safe(again)}", flush=True)


def _reported_on_issue(plan: Plan, report: Schedule | None) -> bool:
    """The bot's own runs (push, nightly) have no thread: their failures go to the report issue."""
    return plan.issue_number is None and plan.trigger in AUTOMATIC and report is not None
