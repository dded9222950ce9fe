"""A maintainer's "Commit suggestion" on the bot's own review is the bot's content, not their work.

GitHub commits an applied suggestion as the person who clicked it, so by author alone it is a
foreign commit, which stops the bot (delivery.foreign_commits). The PR's state keeps what the last
review suggested (state.suggested); commits on top of the bot's last one that change nothing but
apply some of those suggestions are adopted: the applied edits become the script's fix (kept at
the next refresh, as a committed fix is) and the bot builds on them."""

from __future__ import annotations

import base64
from itertools import combinations

from github.Repository import Repository

from maple_ci.github.delivery import BRANCH_PREFIX, foreign_commits, open_pr
from maple_ci.github.state import State, apply_edits, digest

MAX_EDITS = 8  # suggestions per file tried in every combination (2**8 at most)


def adopt_applied(repo: Repository, key: str, base: str, state: State) -> tuple[State, tuple[str, ...]]:
    """The state with applied suggestions as fixes, and the commits adopted (none: nothing applied,
    or the commits hold anything else: then they are a person's work)."""
    pr = open_pr(repo, key, base)
    if pr is None or not state.suggested:
        return state, ()
    head = repo.get_git_ref(f"heads/{BRANCH_PREFIX}{key}").object.sha
    foreign = foreign_commits(repo, head, key)
    if not foreign:
        return state, ()
    bots = repo.get_git_commit(foreign[-1]).parents
    applied = _applied(repo, bots[0].sha if bots else None, head, state.suggested)
    if applied is None:
        return state, ()
    return state._replace(fixes={**state.fixes, **applied}), foreign


def _applied(repo: Repository, bots: str | None, head: str, suggested: dict[str, list]) -> dict[str, list] | None:
    """{path: [digest, edits applied]} when every file changed from `bots` to `head` is a reviewed
    script with some of its suggested edits applied; None otherwise."""
    if bots is None:
        return None
    before, after = _files(repo, bots), _files(repo, head)
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    found = {}
    for path in changed:
        edits = _edits_applied(repo, path, (before.get(path), after.get(path)), suggested.get(path))
        if edits is None:
            return None
        found[path] = [suggested[path][0], edits]
    return found or None


def _edits_applied(repo: Repository, path: str, blobs: tuple[str | None, str | None], suggested: list | None):
    """The subset of the suggested edits that turns the reviewed script into the new one, or None."""
    if suggested is None or None in blobs:
        return None
    old, new = (repo.get_git_blob(sha).content for sha in blobs)
    old, new = _text(old), _text(new)
    fix_digest, edits = suggested
    if digest(old) != fix_digest:
        return None
    for size in range(len(edits[:MAX_EDITS]), 0, -1):
        for chosen in combinations(edits[:MAX_EDITS], size):
            if apply_edits(old, list(chosen)) == new:
                return list(chosen)
    return None


def _files(repo: Repository, commit: str) -> dict[str, str]:
    """{path: blob sha} of a commit's tree."""
    tree = repo.get_git_tree(repo.get_git_commit(commit).tree.sha, recursive=True)
    return {e.path: e.sha for e in tree.tree if e.type == "blob"}


def _text(content: str) -> str:
    return base64.b64decode(content).decode()
