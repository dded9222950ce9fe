"""What a request acts on: the bot's branch maple/port-<key>, the base it goes into and the commit
the scripts are ported from, pinned to what the maintainer saw (bot.run_plan carries it out)."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import NamedTuple

from github.PullRequest import PullRequest
from github.Repository import Repository

from maple_ci.errors import MapleError
from maple_ci.github.approval import fork_of
from maple_ci.github.commands import BotCommand
from maple_ci.github.delivery import BRANCH_PREFIX
from maple_ci.github.events import Plan
from maple_ci.github.markdown import code


class Target(NamedTuple):
    """What a request acts on: the bot's branch maple/port-<key> into `base`, ported from `ref`."""

    key: str
    base: str
    ref: str
    sources: tuple[str, ...]
    origin: str  # the repository the scripts come from (a fork's for a fork's PR)
    fork_head: str | None  # a fork PR's head commit


def target(repo: Repository, plan: Plan, command: BotCommand) -> Target:
    """The request's branch, base and source. On a PR: its head, and its branch as the base (a fork's
    branch cannot take a PR from here: then the PR's base). A comment on the bot's own PR acts on
    the request that made it."""
    if plan.pull_number is None:
        return _branch_target(repo, plan)
    pr = repo.get_pull(plan.pull_number)
    own = _bot_key(repo, pr) if command.name != "verify" else None  # verify: the bot PR's head holds the ports
    if own is None:
        return _pr_target(repo, pr, command, plan.requested_at, (plan.key or "", plan.sources))
    return _own_pr_target(repo, pr, own, command, plan)


def _branch_target(repo: Repository, plan: Plan) -> Target:
    """A request off any PR (an issue, a push, the schedule, a dispatch) acts on the branch it names."""
    return Target(plan.key or "", plan.base or "", plan.ref or "", plan.sources, repo.full_name, None)


def _own_pr_target(repo: Repository, pr: PullRequest, own: str, command: BotCommand, plan: Plan) -> Target:
    """A request on the bot's own PR (key `own`): a branch's acts on its base, a source PR's on that PR."""
    if not own.startswith("pr-"):
        return Target(own, pr.base.ref, pr.base.ref, plan.sources, repo.full_name, None)
    source_pr = repo.get_pull(int(own.removeprefix("pr-")))
    return _pr_target(repo, source_pr, command, plan.requested_at, (own, plan.sources))


def _pr_target(repo: Repository, pr: PullRequest, command: BotCommand, requested_at: str | None,
               asked: tuple[str, tuple[str, ...]]) -> Target:
    """The target of a request on source PR `pr`: its pinned head; its branch as the base, or for a
    fork, the PR's base. `asked`: the request key and sources."""
    key, sources = asked
    ref = _pinned_head(repo, pr, command, requested_at)
    sources = _port_sources(pr, command, sources)
    fork = fork_of(repo, pr)
    if fork is None:
        return Target(key, pr.head.ref, ref, sources, repo.full_name, None)
    return Target(key, pr.base.ref, ref, sources, fork, ref)


def _port_sources(pr: PullRequest, command: BotCommand, sources: tuple[str, ...]) -> tuple[str, ...]:
    """A port without --from ports what the PR changes (the pipeline keeps the launch scripts among
    them); anything else keeps the sources asked for."""
    if command.name != "port" or command.source is not None:
        return sources
    return tuple(f.filename for f in pr.get_files() if f.status != "removed")


def _bot_key(repo: Repository, pr: PullRequest) -> str | None:
    """The request key of one of the bot's own PRs (branch maple/port-<key> in this repository)."""
    if fork_of(repo, pr) is not None or not pr.head.ref.startswith(BRANCH_PREFIX):
        return None
    key = pr.head.ref.removeprefix(BRANCH_PREFIX)
    return key if re.fullmatch(r"pr-[0-9]+|(issue|branch)-[A-Za-z0-9_-]+", key) else None


def _pinned_head(repo: Repository, pr: PullRequest, command: BotCommand, requested_at: str | None) -> str:
    """The PR head to port: the one the comment pinned (`@sha`), or, for a fork's PR, the head only
    if the fork was last pushed before the comment. A fork can push while the job waits in the
    queue; the maintainer asked about what they saw."""
    head = pr.head.sha
    if command.name != "port":
        return head
    if command.sha is not None:
        if not head.startswith(command.sha):
            raise MapleError(f"The PR head is now `{head}`, not `{command.sha}`: review it, then ask again with "
                             f"{code(replace(command, sha=head).text())}", exit_code=2)
        return head
    if _pushed_after(repo, pr, requested_at):
        raise MapleError(f"The PR head `{head}` was pushed after this request; review it, then ask again with "
                         f"{code(replace(command, sha=head).text())} (its `@{head}` ports exactly that commit).", exit_code=2)
    return head


def _pushed_after(repo: Repository, pr: PullRequest, requested_at: str | None) -> bool:
    """Whether the PR's fork may have been pushed after the request. The push time is GitHub's (the
    fork's `pushed_at`), not the committer date, which whoever commits sets. A deleted fork pushes
    nothing; a same-repository head is pushed by people with write access."""
    fork = pr.head.repo
    if fork is None or fork.full_name == repo.full_name or not requested_at:
        return False
    return fork.pushed_at is None or fork.pushed_at > datetime.fromisoformat(requested_at.replace("Z", "+00:00"))


def commit_sha(repo: Repository, ref: str) -> str:
    if re.fullmatch(r"[0-9a-f]{40}", ref):
        return ref
    return repo.get_git_ref(f"heads/{ref}").object.sha
