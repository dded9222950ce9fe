"""Where a port came from, and whether a maintainer approved running what a fork wrote.

A port made from a fork's launch script may carry what the fork wrote (an env file it sources, a
venv it activates), and the bot's PR holding it is a same-repository PR: verifying it, on a
comment, on push or nightly after a merge, would run the fork's code at the center. So every port
records its source: trailers on the bot's commit (repository, commit, request), and on each file
ported from a fork a stamp at its end that verification reads back whatever merge strategy later
moved the file. A fork-derived port is verified only once a maintainer approved that fork commit
with `/maple approve <sha>` (as Hubcast does). The approval is a commit status that the bot puts
on that SHA in this repository, which a fork cannot write, naming the approver; only the bot's own
statuses count (bot_login), and a pin of a PR head has at least 12 hex digits; the approver's
write access is asked again at every read, so taking it away takes the approval away too.
"""

from __future__ import annotations

import base64
import os
import re
from itertools import islice
from typing import NamedTuple

from github import GithubException, UnknownObjectException
from github.Repository import Repository

from maple_ci.errors import MapleError
from maple_ci.github.authorization import WRITE_PERMISSIONS

CONTEXT = "maple-ci/approval"
HISTORY = 50  # commits of a script's history searched for a fork's PR (newest first)
_APPROVER = re.compile(r"approved by @([A-Za-z0-9-]{1,39})")
# The stamp's two lines; the LAST pair in a file counts: the bot appends it after everything a fork
# could have put in the port (a fork-written look-alike higher up is overridden).
_STAMP = re.compile(r"^# Maple-Source-Repository: ([\w.-]+/[\w.-]+)\n# Maple-Source-Commit: ([0-9a-f]{40})$", re.M)


class Provenance(NamedTuple):
    repository: str  # owner/name the ported script came from: a fork's full name for a fork's PR
    commit: str  # the source commit, 40 hex digits
    request: str  # what asked for the port (the comment's URL)


def trailers(source: Provenance) -> str:
    """The commit-message trailers naming the source (git interpret-trailers reads them)."""
    request = " ".join(source.request.split())  # one line: a trailer value cannot hold a newline
    return (f"Maple-Source-Repository: {source.repository}\nMaple-Source-Commit: {source.commit}\n"
            f"Maple-Request: {request}")


def stamp(content: str, source: Provenance) -> str:
    """`content` with the source stamped at its end (bash comments: the script runs the same)."""
    return (f"{content.rstrip(chr(10))}\n\n# Maple-Source-Repository: {source.repository}\n"
            f"# Maple-Source-Commit: {source.commit}\n")


def stamped(content: str) -> tuple[str, str] | None:
    """(repository, commit) of the last stamp in `content`; None for a port with no stamp."""
    found = _STAMP.findall(content)
    return found[-1] if found else None


def fork_source(repo: Repository, path: str, ref: str, request: str) -> Provenance | None:
    """The fork a script at commit `ref` came from: its own stamp (a port of a fork's port), else the PR of
    any commit that changed it up to `ref` that came from a fork (merged: merging a fork's PR is not
    approving its code for the center), with that PR's head as the commit."""
    found = stamped(_file_at(repo, path, ref) or "")
    if found is not None and found[0] != repo.full_name:
        return Provenance(*found, request)
    return fork_pr_source(repo, path, ref, request)


def fork_pr_source(repo: Repository, path: str, ref: str, request: str) -> Provenance | None:
    """The head of the first fork PR among the PRs of the commits that changed `path` up to `ref`."""
    for commit in islice(repo.get_commits(sha=ref, path=path), HISTORY):  # a PaginatedList slice overruns
        for pull in commit.get_pulls():
            fork = fork_of(repo, pull)
            if fork is not None:
                return Provenance(fork, pull.head.sha, request)
    return None


def fork_of(repo: Repository, pull) -> str | None:
    """The fork a PR's head comes from (a deleted one: "unknown/deleted-fork"); None when its head
    is a branch of this repository."""
    head = pull.head.repo
    if head is not None and head.full_name == repo.full_name:
        return None
    return head.full_name if head else "unknown/deleted-fork"


def _file_at(repo: Repository, path: str, commit: str) -> str | None:
    """A file's text at a commit, through the git data API; None when it is not a file there."""
    tree = repo.get_git_tree(repo.get_git_commit(commit).tree.sha, recursive=True)
    entry = next((e for e in tree.tree if e.path == path and e.type == "blob"), None)
    return base64.b64decode(repo.get_git_blob(entry.sha).content).decode(errors="replace") if entry else None


def permission(repo: Repository, login: str) -> str | None:
    """The user's permission on the repository (admin/write/read/none); None for an unknown user."""
    try:
        return repo.get_collaborator_permission(login)
    except UnknownObjectException:
        return None


def bot_login() -> str:
    """Who the bot's approval statuses come from: GitHub Actions' GITHUB_TOKEN acts as
    github-actions[bot]; a GitHub App's token as `<app>[bot]` (set MAPLE_BOT_LOGIN)."""
    return os.environ.get("MAPLE_BOT_LOGIN") or "github-actions[bot]"


def approver(repo: Repository, sha: str) -> str | None:
    """Who approved verifying ports made from `sha`, if one who still has write access did. Only a
    status the bot itself wrote counts: any app or workflow with `statuses: write` can write one
    that says "approved by @maintainer"."""
    for status in _statuses(repo, sha):
        login = _bot_approval(status)
        if login is not None and permission(repo, login) in WRITE_PERMISSIONS:
            return login
    return None


def _statuses(repo: Repository, sha: str) -> list:
    """The combined status of `sha`: the newest status of each context; none when there is no such
    commit here (a fork's force-pushed commit: not approved)."""
    try:
        return repo.get_commit(sha).get_combined_status().statuses
    except GithubException as error:
        if error.status in (404, 422):
            return []
        raise


def _bot_approval(status) -> str | None:
    """The approver a successful approval status says, when the bot wrote it; else None."""
    match = _APPROVER.fullmatch(status.description or "")
    if not match or not _approval_context(status) or not _written_by_bot(status):
        return None
    return match[1]


def _approval_context(status) -> bool:
    return status.context == CONTEXT and status.state == "success"


def _written_by_bot(status) -> bool:
    return status.creator is not None and status.creator.login == bot_login()


def approve(repo: Repository, sha: str, login: str) -> str:
    """Record `login`'s approval of `sha`; the reply to post."""
    try:
        repo.get_commit(sha).create_status(state="success", context=CONTEXT, description=f"approved by @{login}")
    except GithubException as error:
        if error.status == 422:  # GitHub: no commit with that SHA in this repository or its PRs
            raise MapleError(f"There is no commit {sha} in this repository or its pull requests.", exit_code=2) from error
        raise
    return (f"Approved `{sha}`: maple-ci now verifies ports made from that commit "
            "(`/maple verify` on the port's PR runs them).")


def waiting_note(sha: str) -> str:
    return (f"Verification waits for a maintainer's approval: this port comes from a fork's commit `{sha}`; "
            f"a maintainer who reviewed it comments `/maple approve {sha}`.")
