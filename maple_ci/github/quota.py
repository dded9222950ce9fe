"""The limit on open maple-ci PRs (`pull_requests.limit` in .github/maple.yml), as Renovate's
prConcurrentLimit: push and nightly open no PR past it; a person's request is always answered,
and a PR already open is still updated."""

from __future__ import annotations

from github.PullRequest import PullRequest
from github.Repository import Repository

from maple_ci.github.config import PullRequests
from maple_ci.github.delivery import BRANCH_PREFIX


def open_bot_prs(repo: Repository) -> list[PullRequest]:
    """The open PRs from the bot's branches in this repository, oldest first."""
    return [pr for pr in repo.get_pulls(state="open")
            if pr.head.ref.startswith(BRANCH_PREFIX) and pr.head.repo is not None and pr.head.repo.full_name == repo.full_name]


def at_limit(repo: Repository, settings: PullRequests) -> bool:
    """Whether an automatic run may open no more PRs (the limit 0 means none)."""
    return held_back_text(len(open_bot_prs(repo)), settings) is not None


def waiting_text(settings: PullRequests) -> str:
    """What a run that opened nothing because of the limit says."""
    return (f"Not opened: {settings.limit} maple-ci PRs are open (`pull_requests.limit` in .github/maple.yml). "
            "Merge or close one and the next push or nightly run opens this one.")


def held_back_text(open_count: int, settings: PullRequests) -> str | None:
    """The dashboard's line while the limit holds automatic PRs back (`open_count` PRs are open); None while it does not."""
    if settings.limit == 0 or open_count < settings.limit:
        return None
    return (f"**Held back**: {open_count} maple-ci PRs are open, the limit (`pull_requests.limit`), so push and nightly runs "
            "open no more until one is merged or closed.")
