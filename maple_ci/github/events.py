"""From a GitHub event payload to a plan: what the bot should do, decided without any I/O.

Like miss-islington, the bot is a pure function of the event; `bot.run_plan` carries a plan out.
Every event that asks for nothing gives a Plan with only a `reason`, so a log line can say why
the bot stayed quiet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fnmatch import fnmatch
from typing import Any, Iterable

from maple_ci.github.config import DEFAULT_PATH
from maple_ci.github.ticks import ticked
from maple_ci.github.authorization import TRUSTED_ASSOCIATIONS, refusal
from maple_ci.github.commands import (
    BotCommand,
    CommandError,
    command_line,
    help_text,
    parse_comment,
)

# The dashboard issue's hidden line (report.MARKER; dashboard.py imports this module's Plan).
DASHBOARD_MARKER = "<!-- maple-ci portability report -->"
# A push payload lists at most this many commits; with that many, files may be missing from it.
PUSH_COMMITS_CAP = 20


@dataclass(frozen=True)
class Plan:
    reason: str  # one line for the log and the job summary
    command: BotCommand | None = None  # what to run; None: run nothing
    key: str | None = None  # request key; the bot's branch is maple/port-<key>
    base: str | None = None  # branch to port from and to open the PR against; None: the PR's base
    ref: str | None = None  # commit or branch to check out and attach check runs to; None: the PR head
    pull_number: int | None = None  # the PR a comment was made on
    issue_number: int | None = None  # where replies go; None: the job summary only
    report: bool = False  # keep the dashboard issue in step with the results (nightly, a retry box)
    comment_id: int | None = None  # the comment to react to
    reaction: str | None = None  # "eyes" (accepted) or "confused" (rejected)
    actor: str | None = None  # whose write permission to confirm before anything; None: implied by the event
    association: str | None = None  # the actor's author_association, for authorization.authorize
    sources: tuple[str, ...] = ()  # launch scripts to port; empty: the command's --from or every tracked script
    reply: str | None = None  # posted as is (help, a command error); nothing is run
    exit_code: int = 0  # 2: the event carried an invalid command (the CLI's usage-error code)
    requested_at: str | None = None  # the comment's created_at: a PR head committed later was not what was seen
    request: str | None = None  # where the request came from, for the port's trailer (the comment's URL)
    trigger: str = "comment"  # "comment" | "push" | "schedule" | "dispatch" | "dashboard": push and schedule are the bot's own

    @property
    def idle(self) -> bool:
        """Nothing to run and nothing to say."""
        return self.command is None and self.reply is None


def plan_event(
    event_name: str,
    payload: dict[str, Any],
    known_clusters: Iterable[str],
    tracked: Iterable[str] = (),
    targets: Iterable[str] = (),
) -> Plan:
    """`tracked`: glob patterns of the launch scripts the repository keeps ported;
    `targets`: the clusters they are kept ported to (both from the repository's configuration)."""
    if event_name == "issue_comment":
        return plan_issue_comment(payload, known_clusters)
    if event_name == "push":
        return plan_push(payload, tracked, targets)
    if event_name == "schedule":
        return plan_schedule(payload, targets)
    if event_name == "workflow_dispatch":
        return plan_workflow_dispatch(payload, known_clusters, targets)
    if event_name == "issues":
        return plan_dashboard_edit(payload, known_clusters)
    return Plan(reason=f"event {event_name!r} is not handled")


def plan_issue_comment(payload: dict[str, Any], known_clusters: Iterable[str]) -> Plan:
    comment, issue = payload["comment"], payload["issue"]
    ignored = _ignored_comment(payload)
    if ignored is not None:
        return Plan(reason=ignored)
    known = tuple(known_clusters)
    on_pr = "pull_request" in issue
    where = _comment_where(comment, issue, on_pr)
    if comment.get("author_association") not in TRUSTED_ASSOCIATIONS:
        # No permission lookup: the association already rules out write access. Only the reply.
        return Plan(reason=f"comment by {comment.get('author_association')}, not a trusted association",
                    reply=refusal(comment["user"]["login"]), **{**where, "actor": None})
    try:
        command = _comment_command(comment["body"] or "", known, on_pr)
    except CommandError as error:
        return Plan(reason=f"invalid command: {error.problem}", reaction="confused", reply=str(error), exit_code=2, **where)
    return _comment_plan(payload, command, known, (on_pr, where))


def _ignored_comment(payload: dict[str, Any]) -> str | None:
    """Why a comment asks for nothing (an edit, a bot's, no /maple line); None when it may."""
    comment = payload["comment"]
    if payload.get("action") != "created":
        # Edits are ignored so that fixing a typo in an old comment never re-runs a port.
        return f"comment {payload.get('action')}, not created"
    if comment["user"].get("type") == "Bot":
        return "comment by a bot"
    if command_line(comment["body"] or "") is None:
        return "no /maple command in the comment"
    return None


def _comment_where(comment: dict[str, Any], issue: dict[str, Any], on_pr: bool) -> dict[str, Any]:
    """The Plan fields that say where a comment's request came from and who made it."""
    return dict(
        issue_number=issue["number"],
        comment_id=comment["id"],
        actor=comment["user"]["login"],
        association=comment["author_association"],
        pull_number=issue["number"] if on_pr else None,
        requested_at=comment.get("created_at"),
        request=comment.get("html_url"),
    )


def _comment_command(body: str, known: tuple[str, ...], on_pr: bool) -> BotCommand:
    """The comment's command; a port on an issue must name its script."""
    command = parse_comment(body, known)
    assert command is not None  # the caller found a /maple line
    if _port_without_source(command, on_pr):
        raise CommandError("On an issue there is no changed script to port: name one with `--from PATH`.", known)
    return command


def _port_without_source(command: BotCommand, on_pr: bool) -> bool:
    """A port off a PR with no --from (`/maple recreate` takes the scripts its PR already has)."""
    return command.name == "port" and not command.recreate and not on_pr and command.source is None


def _comment_plan(payload: dict[str, Any], command: BotCommand, known: tuple[str, ...],
                  asked: tuple[bool, dict[str, Any]]) -> Plan:
    """A valid command's plan: help's reply, or the command on the PR's or the issue's branch.
    `asked`: whether the comment is on a PR, and the Plan fields saying where it came from."""
    (on_pr, where), issue = asked, payload["issue"]
    if command.name == "help":
        return Plan(reason="help", reaction="eyes", reply=help_text(known), **where)
    if on_pr:
        return Plan(reason=f"{command.name} on PR", command=command, key=f"pr-{issue['number']}", reaction="eyes", **where)
    default = payload["repository"]["default_branch"]
    return Plan(
        reason=f"{command.name} on issue",
        command=command,
        key=f"issue-{issue['number']}",
        base=default,
        ref=default,
        reaction="eyes",
        **where,
    )


def plan_push(payload: dict[str, Any], tracked: Iterable[str], targets: Iterable[str]) -> Plan:
    """Re-port the tracked launch scripts a push to the default branch changed."""
    default = payload["repository"]["default_branch"]
    ignored = _ignored_push(payload, default)
    if ignored is not None:
        return Plan(reason=ignored)
    targets = tuple(targets)
    patterns = tuple(tracked)
    if not targets or not patterns:
        return Plan(reason="no tracked scripts or target clusters configured")
    sources = _pushed_sources(payload, patterns)
    if sources is None:
        return Plan(reason="no tracked launch script changed")
    return Plan(
        reason=f"push changed {', '.join(sources) or 'possibly every tracked script'}",
        command=BotCommand("port", targets),
        key=branch_key(default),
        base=default,
        ref=payload["after"],
        sources=sources,
        request=_push_request(payload),
        trigger="push",
    )


def _push_request(payload: dict[str, Any]) -> str:
    """Where a push's request came from, for the port's trailer: its head commit's page."""
    return (payload.get("head_commit") or {}).get("url") or f"push of {payload['after']}"


def _ignored_push(payload: dict[str, Any], default: str) -> str | None:
    """Why a push asks for nothing (a deletion, another branch); None when it may."""
    if payload.get("deleted"):
        return "ref deleted"
    if payload["ref"] != f"refs/heads/{default}":
        # Other branches are ported on request (a comment on their PR), not on every push; this
        # also keeps the bot from reacting to pushes to its own maple/port-* branches.
        return f"push to {payload['ref']}, not the default branch"
    return None


def _pushed_sources(payload: dict[str, Any], patterns: tuple[str, ...]) -> tuple[str, ...] | None:
    """The tracked scripts the push changed; () for every tracked script when the configuration
    changed or there were too many commits to trust the lists; None when it changed none."""
    commits = payload.get("commits") or []
    if len(commits) >= PUSH_COMMITS_CAP or DEFAULT_PATH in changed_paths(commits):
        return ()  # a new configuration (the merged onboarding PR) may name new targets or scripts
    return tuple(p for p in changed_paths(commits) if _tracked(p, patterns)) or None


def _tracked(path: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch(path, pattern) for pattern in patterns)


def changed_paths(commits: list[dict[str, Any]]) -> list[str]:
    """Files that exist and differ after the commits, in first-seen order; removed files are dropped."""
    paths: dict[str, None] = {}
    for commit in commits:
        for path in commit.get("added", []) + commit.get("modified", []):
            paths[path] = None
        for path in commit.get("removed", []):
            paths.pop(path, None)
    return list(paths)


def plan_schedule(payload: dict[str, Any], targets: Iterable[str]) -> Plan:
    """Nightly: verify the ported scripts on the default branch still run (modules and images drift)."""
    targets = tuple(targets)
    if not targets:
        return Plan(reason="no target clusters configured")
    default = payload["repository"]["default_branch"]
    return Plan(reason="scheduled verification", command=BotCommand("verify", targets), key=branch_key(default), base=default,
                ref=default, report=True, trigger="schedule")


def plan_workflow_dispatch(payload: dict[str, Any], known_clusters: Iterable[str], targets: Iterable[str]) -> Plan:
    """A manual run: input `command` is a `/maple` command without the `/maple`; empty acts as the schedule.

    Only people with write access can dispatch a workflow, so no permission check is planned."""
    text = _dispatched_command(payload)
    if not text:  # run by a person: whatever day the schedule names
        return replace(plan_schedule(payload, targets), trigger="dispatch")
    known_clusters = tuple(known_clusters)
    try:
        command = parse_comment(f"/maple {text}", known_clusters)
    except CommandError as error:
        return Plan(reason=f"invalid command: {error.problem}", reply=str(error), exit_code=2)
    assert command is not None  # the text was given a /maple prefix
    if command.name == "help":
        return Plan(reason="help", reply=help_text(known_clusters))
    branch = payload["ref"].removeprefix("refs/heads/")
    return Plan(reason=f"{command.name} dispatched", command=command, key=branch_key(branch), base=branch, ref=branch,
                trigger="dispatch")


def _dispatched_command(payload: dict[str, Any]) -> str:
    """The dispatch's `command` input, stripped; empty when it has none."""
    return ((payload.get("inputs") or {}).get("command") or "").strip()


def branch_key(branch: str) -> str:
    """A request key from a branch name, safe inside a ref name (no `..`, `~`, `:`, spaces...)."""
    return "branch-" + re.sub(r"[^A-Za-z0-9_-]+", "-", branch).strip("-")


def plan_dashboard_edit(payload: dict[str, Any], known_clusters: Iterable[str]) -> Plan:
    """A box ticked on the dashboard (an `issues.edited` event): its command, on the default branch,
    by whoever edited, once the API confirms their write access. One box per edit: the first."""
    issue, sender = payload["issue"], payload.get("sender") or {}
    ignored = _ignored_edit(payload)
    if ignored is not None:
        return Plan(reason=ignored)
    texts = ticked(((payload.get("changes") or {}).get("body") or {}).get("from") or "", issue.get("body") or "")
    if not texts:
        return Plan(reason="no dashboard box ticked")
    try:
        command = parse_comment(f"/maple {texts[0]}", tuple(known_clusters))
    except CommandError as error:
        return Plan(reason=f"invalid dashboard box: {error.problem}", reply=str(error), issue_number=issue["number"], exit_code=2)
    assert command is not None  # the text was given a /maple prefix
    default = payload["repository"]["default_branch"]
    # Editing the body of the bot's issue takes write access (a collaborator's); the permission API confirms it.
    return Plan(reason=f"dashboard: {texts[0]}", command=command, key=branch_key(default), base=default, ref=default,
                issue_number=issue["number"], actor=sender.get("login"), association="COLLABORATOR",
                report=command.name == "verify", trigger="dashboard")


def _ignored_edit(payload: dict[str, Any]) -> str | None:
    """Why an issues event asks for nothing (not an edit of the bot's dashboard by a person); None when it may."""
    issue, sender = payload["issue"], payload.get("sender") or {}
    if payload.get("action") != "edited":
        return f"issue {payload.get('action')}, not edited"
    if sender.get("type") == "Bot":
        return "issue edited by a bot"  # the bot's own redraw, which must not loop
    if (issue.get("user") or {}).get("type") != "Bot" or DASHBOARD_MARKER not in (issue.get("body") or ""):
        return "not maple-ci's dashboard"
    return None
