"""Deliver port results to GitHub: one branch, one commit, one PR, one review (check runs: checks.py).

Everything goes through PyGithub against GITHUB_API_URL, so GitHub Enterprise Server, Prism and
the test fake work like github.com. Results come from the port pipeline in the shape below.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any, NamedTuple, TypedDict

import github_action_toolkit as gha
from github import Auth, Github, GithubRetry, InputGitAuthor, InputGitTreeElement, UnknownObjectException
from github.PullRequest import PullRequest
from github.Repository import Repository

from maple_ci.errors import MapleError
from maple_ci.github.markdown import block_fence, code, plain

BRANCH_PREFIX = "maple/port-"
# The author of the bot's commits; a commit on its branch by anyone else is a person's work, which
# the bot never builds over (Renovate stops updating a branch someone else committed to).
BOT_NAME = "maple-ci"
BOT_AUTHOR = InputGitAuthor(BOT_NAME, "maple-ci@users.noreply.github.com")
FOREIGN_WALK_LIMIT = 50  # commits looked at from the branch head for the bot's last one
# A commit made through the API with GITHUB_TOKEN or an app's token: committed by "<id>+<name>[bot]"
# at the server's noreply domain (users.noreply.github.com, or users.noreply.<GHES host>).
_BOT_EMAIL = re.compile(r"\[bot\]@users\.noreply\.")
REVIEW_PREFIX = "<!-- maple-ci review "  # then the suggestions' digest, or "superseded", and " -->"
REACTIONS = ("eyes", "rocket", "confused")
TITLE_LIMIT = 256  # characters in a PR title
BODY_LIMIT = 65536  # characters in a PR body or a comment
JOB_SUMMARY_LIMIT = 1024 * 1024  # bytes GitHub accepts per step summary file


# --- what the port pipeline hands over (one SourceResult per ported source script) ---
# The serialised form of the pipeline's results, as the bot keeps them in its state and posts them:
# a check is verify.static.Check's model_dump() (name, ok, severity, message, line); a suggestion is
# debug.Suggestion's model_dump() (path, start_line, line, body) with the debug agent's reason as
# "message". (Optional keys live in total=False bases: typing.NotRequired needs Python 3.11.)


def annotation_level(check: dict) -> str:
    """GitHub's annotation level for a serialised check: an error is a failure."""
    # "level" is how states written before the one Check type said it (PR bodies keep them)
    return "warning" if "warning" in (check.get("severity"), check.get("level")) else "failure"


def check_failed(check: dict) -> bool:
    """A failed check that fails the script (a failed warning does not)."""
    return not check["ok"] and annotation_level(check) == "failure"


class _ClusterOptional(TypedDict, total=False):
    note: str  # one sentence for the PR: why verification was skipped, what failed, what the debug agent found
    fixed: str  # the script with the debug agent's fix, whose re-run passed
    fix_pr: str  # nightly: the PR proposing that fix (publish.propose_fixes)
    speed: dict[str, Any]  # the first run's verify.speed.Speed, model_dump(): bandwidth, step time, transport


class ClusterResult(_ClusterOptional):
    cluster: str
    path: str  # scripts/<cluster>/...
    content: str
    template: str  # template id
    checks: list[dict[str, Any]]  # Check.model_dump()
    verification: str  # "pending" | "running" | "passed" | "failed" | "error" | "skipped"
    log_url: str | None
    suggestions: list[dict[str, Any]]  # Suggestion.model_dump() with "message"


class _PortOptional(TypedDict, total=False):
    notes: list[str]  # e.g. clusters no script was generated for, and why
    provenance: dict[str, str]  # approval.Provenance as a dict: the source repository, commit and request


class SourceResult(_PortOptional):
    source: str  # the launch script that was ported
    intent: dict[str, Any]  # JobIntent as `maple extract --json` prints it
    clusters: list[ClusterResult]


class Delivered(NamedTuple):
    pr: PullRequest | None  # None: the base branch already holds these files, nothing to propose
    sha: str  # head of the bot's branch (or of the base when pr is None)
    committed: bool  # whether this call made a new commit
    foreign: tuple[str, ...] = ()  # commits by others on the branch: nothing was changed
    opened: bool = False  # whether this call opened the PR


def connect(
    token: str | None = None,
    base_url: str | None = None,
    *,
    pace: bool = True,
) -> Github:
    """A client for GITHUB_API_URL with GITHUB_TOKEN, masked in the Actions log before any use.

    `pace` spaces requests out and backs off on errors as GitHub advises against secondary rate
    limits (0.25 s between requests, 1 s between writes); tests against local servers turn it off."""
    token, base_url = _credentials(token, base_url)
    gha.add_mask(token)
    # 5xx and secondary rate limits (403/429 with Retry-After or a rate-limit message) are retried
    # with exponential backoff; the cap makes a long primary rate-limit reset fail instead of
    # silently holding a runner for an hour.
    retry = GithubRetry(total=5, backoff_factor=2.0 if pace else 0, secondary_rate_wait=60, max_rate_limit_wait=300)
    # lazy: objects got by number or id are fetched only when a field is read, so reacting to a
    # comment or commenting on an issue costs one request, not two.
    return Github(base_url=base_url, auth=Auth.Token(token), retry=retry, per_page=100, lazy=True, **_pacing(pace))


def _credentials(token: str | None, base_url: str | None) -> tuple[str, str]:
    """The token and API address given, else Actions' GITHUB_TOKEN and GITHUB_API_URL."""
    token = token or os.environ.get("GITHUB_TOKEN")
    base_url = base_url or os.environ.get("GITHUB_API_URL")
    if not token or not base_url:
        raise MapleError("GITHUB_TOKEN and GITHUB_API_URL must be set (GitHub Actions sets both).")
    return token, base_url


def _pacing(pace: bool) -> dict[str, float | None]:
    if not pace:
        return {"seconds_between_requests": None, "seconds_between_writes": None}
    return {"seconds_between_requests": 0.25, "seconds_between_writes": 1.0}


def open_pr(repo: Repository, request_key: str, base_branch: str) -> PullRequest | None:
    """The open PR of branch maple/port-<request_key> into `base_branch`, if there is one."""
    found = list(repo.get_pulls(state="open", head=f"{repo.owner.login}:{BRANCH_PREFIX}{request_key}", base=base_branch))
    return found[0] if found else None


def deliver(repo: Repository, request_key: str, files: dict[str, str | None], base_branch: str, title: str, body: str,
            trailers: str = "", commit_title: str | None = None, recreate: bool = False,
            adopted: tuple[str, ...] = ()) -> Delivered:
    """Put `files` on branch maple/port-<request_key> as one commit and open or update its PR (a
    file whose content is None is deleted).
    `trailers` end the commit message (where the port came from, approval.trailers); `commit_title`
    is its first line (default: the title).

    A commit by anyone else on the open PR's branch stops it: nothing is committed and the
    commits are returned in `foreign`, unless `recreate`, which starts the branch again from the base;
    `adopted` commits are the bot's own content (applied.adopt_applied) and built on.

    Idempotent: the same request again finds the open PR, builds the same tree, and makes no
    commit, no new PR and no edit (the PR already describes that tree). A branch this call
    created is deleted again when the PR cannot be opened, so no branch is left without a PR."""
    branch = BRANCH_PREFIX + request_key
    pr = open_pr(repo, request_key, base_branch)
    ref = _find_ref(repo, f"heads/{branch}")
    keep = _builds_on_branch(pr, ref, recreate)
    foreign = tuple(c for c in foreign_commits(repo, ref.object.sha, request_key) if c not in adopted) if keep else ()
    if foreign:
        return Delivered(pr, ref.object.sha, False, foreign)
    parent_sha = _parent_sha(repo, ref if keep else None, base_branch)
    parent = repo.get_git_commit(parent_sha)
    tree = repo.create_git_tree(_tree_elements(repo, files), base_tree=parent.tree)
    if tree.sha == parent.tree.sha:
        return Delivered(pr, parent_sha, False)
    commit = repo.create_git_commit(_commit_message(request_key, commit_title or title, trailers), tree, [parent],
                                    author=BOT_AUTHOR)
    created = _move_branch(repo, ref, branch, commit.sha, keep)
    if pr is None:
        pr = _create_pr(repo, base_branch, branch, (title, body), created)
        return Delivered(pr, commit.sha, True, opened=True)
    edit_pr(pr, title, body)
    return Delivered(pr, commit.sha, True)


def _builds_on_branch(pr: PullRequest | None, ref, recreate: bool) -> bool:
    """Build on the open PR's branch (keeping any commit a person added there); without an open PR
    the branch is stale (merged or closed) and starts again from the base, as it does on `recreate`."""
    return pr is not None and ref is not None and not recreate


def _parent_sha(repo: Repository, kept_ref, base_branch: str) -> str:
    """The commit to build on: the kept branch's head, else the base branch's."""
    base_ref = kept_ref if kept_ref is not None else _find_ref(repo, f"heads/{base_branch}")
    if base_ref is None:
        raise MapleError(f"Branch {code(base_branch)} does not exist any more (deleted after the request?); "
                         "nothing was ported.")
    return base_ref.object.sha


def _tree_elements(repo: Repository, files: dict[str, str | None]) -> list[InputGitTreeElement]:
    """One blob per file, in path order; a script with a `#!` line is executable. None deletes the
    file (GitHub's tree API: `sha: null`)."""
    return [InputGitTreeElement(path, "100644", "blob", sha=None) if content is None else
            InputGitTreeElement(path, _file_mode(content), "blob", sha=repo.create_git_blob(content, "utf-8").sha)
            for path, content in sorted(files.items())]


def _file_mode(content: str) -> str:
    return "100755" if content.startswith("#!") else "100644"


def _commit_message(request_key: str, title: str, trailers: str) -> str:
    """The title on one line, the request line (foreign_commits finds the bot's commits by it), the trailers."""
    return f"{_one_line(title)}\n\n{_request_line(request_key)}" + (f"\n\n{trailers}" if trailers else "")


def _move_branch(repo: Repository, ref, branch: str, sha: str, keep: bool):
    """Point the branch at `sha`; the ref when this call created the branch, else None."""
    if ref is None:
        return repo.create_git_ref(f"refs/heads/{branch}", sha)
    # A stale branch is reset onto the base; an open PR's branch only fast-forwards, so a
    # commit pushed there meanwhile makes this fail rather than vanish.
    ref.edit(sha, force=not keep)
    return None


def _create_pr(repo: Repository, base_branch: str, branch: str, text: tuple[str, str], created) -> PullRequest:
    """Open the PR (`text`: its title and body); a branch this call `created` is deleted again when
    the PR cannot be opened, so no branch is left without a PR."""
    title, body = text
    try:
        return repo.create_pull(base=base_branch, head=branch, title=_one_line(title)[:TITLE_LIMIT],
                                body=truncate(body, BODY_LIMIT))
    except Exception:
        if created is not None:
            created.delete()
        raise


def _request_line(request_key: str) -> str:
    return f"maple-ci request {request_key}"


def foreign_commits(repo: Repository, head: str, request_key: str) -> tuple[str, ...]:
    """The commits on top of the bot's last commit on its branch, newest first: a person's (a
    suggestion applied, a fix pushed, "Update branch", the bot's commit amended). The bot's own
    carry its author and request line and were committed through the API by a bot account."""
    found, sha = [], head
    for _ in range(FOREIGN_WALK_LIMIT):
        commit = repo.get_git_commit(sha)
        if _bots_commit(commit, request_key):
            return tuple(found)
        found.append(sha)
        if not commit.parents:
            break
        sha = commit.parents[0].sha
    return tuple(found)


def _bots_commit(commit, request_key: str) -> bool:
    """The bot's own commit for the request: its author, its request line, committed by a bot account."""
    return commit.author.name == BOT_NAME and _request_line(request_key) in commit.message.splitlines() \
        and bool(_BOT_EMAIL.search(commit.committer.email or ""))


def closed_pr(repo: Repository, request_key: str, base_branch: str) -> PullRequest | None:
    """The bot branch's newest PR when someone closed it without merging (a merged one is done
    with: later changes deserve a new PR)."""
    newest = newest_closed_pr(repo, request_key, base_branch)
    return newest if newest is not None and not newest.merged else None


def newest_closed_pr(repo: Repository, request_key: str, base_branch: str) -> PullRequest | None:
    """The bot branch's newest closed PR, merged or not."""
    found = repo.get_pulls(state="closed", head=f"{repo.owner.login}:{BRANCH_PREFIX}{request_key}", base=base_branch,
                           sort="created", direction="desc")
    return next(iter(found), None)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _find_ref(repo: Repository, name: str):
    ref = repo.get_git_ref(name)
    try:
        ref.object  # PyGithub fetches lazily: this is the request that finds out
    except UnknownObjectException:
        return None
    return ref


def edit_pr(pr: PullRequest, title: str, body: str) -> None:
    title, body = _one_line(title)[:TITLE_LIMIT], truncate(body, BODY_LIMIT)
    if pr.title != title or (pr.body or "") != body:
        pr.edit(title=title, body=body)


def react(comment, content: str) -> None:
    """React to an issue comment: eyes = working on it, rocket = done, confused = cannot do it."""
    if content not in REACTIONS:
        raise ValueError(f"reaction {content!r} is not one of {REACTIONS}")
    comment.create_reaction(content)


def post_review(pr: PullRequest, commit_sha: str, suggestions: list[dict[str, Any]], again: bool = False):
    """All suggestions as ONE review (one notification, one "apply batch") that only comments.

    One review per PR: a refresh with the same suggestions posts nothing (unless `again`: the branch
    was started again, so the earlier review is on a commit no longer in the PR); new ones replace
    the bot's earlier reviews, whose text then says they are superseded (GitHub cannot dismiss a comment review)."""
    comments = [review_comment(s) for s in suggestions]
    marker = f"{REVIEW_PREFIX}{hashlib.sha256(json.dumps(comments, sort_keys=True).encode()).hexdigest()[:16]} -->"
    earlier = _bot_reviews(pr)
    if not again and any(marker in r.body for r in earlier):
        return None
    _supersede(earlier)
    if not comments:
        return None
    # Pinned to the commit the suggestions were computed on; lazy, so this makes no request.
    commit = pr.base.repo.get_commit(commit_sha)
    return pr.create_review(
        commit=commit,
        body=f"maple-ci has {len(comments)} suggestion(s) for the ported scripts.\n{marker}",
        event="COMMENT",
        comments=comments,
    )


def _bot_reviews(pr: PullRequest) -> list:
    return [r for r in pr.get_reviews() if REVIEW_PREFIX in (r.body or "")]


def _supersede(reviews: list) -> None:
    """Say in each review not yet marked that its suggestions are superseded."""
    for review in reviews:
        if f"{REVIEW_PREFIX}superseded" not in review.body:
            review.edit("maple-ci's earlier suggestions are superseded: the ported scripts changed since."
                        f"\n{REVIEW_PREFIX}superseded -->")


def review_comment(s: dict[str, Any]) -> dict[str, Any]:
    """A review comment holding a ```suggestion block that replaces exactly lines start_line..line,
    after the reason as plain text (a model's words among them: no fence, link or mention of its own)."""
    fence = block_fence(s["body"])
    text = f"{fence}suggestion\n{_suggested_lines(s['body'])}{fence}"
    if s.get("message"):
        text = f"{plain(s['message'])}\n\n{text}"
    comment: dict[str, Any] = {"path": s["path"], "body": text, "line": s["line"], "side": "RIGHT"}
    if s["start_line"] != s["line"]:
        comment.update(start_line=s["start_line"], start_side="RIGHT")
    return comment


def _suggested_lines(body: str) -> str:
    """The replacement ending in one newline. Only the final newline goes: a trailing blank line is
    part of the replacement, and an empty block (not a blank line) deletes the lines."""
    return body if body.endswith("\n") or not body else body + "\n"


def truncate(text: str, limit: int, encoding: str | None = None) -> str:
    """`text` cut to `limit` characters (or bytes in `encoding`), saying so at the end."""
    note = "\n\n… truncated by maple-ci"
    size = len(text.encode(encoding)) if encoding else len(text)
    if size <= limit:
        return text
    keep = limit - len(note.encode(encoding) if encoding else note)
    cut = text.encode(encoding)[:keep].decode(encoding, "ignore") if encoding else text[:keep]
    return cut + note


def write_job_summary(markdown: str) -> None:
    """Append to GITHUB_STEP_SUMMARY (nothing outside Actions), keeping the file within 1 MiB."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    used = os.path.getsize(path) if os.path.exists(path) else 0
    room = JOB_SUMMARY_LIMIT - used - 1  # the newline the toolkit adds
    if room >= 100:  # else no space left even for the truncation note
        gha.append_job_summary(truncate(markdown, room, "utf-8"))


def log_annotations(results: list[SourceResult]) -> None:
    """Failed checks and verifications as annotations of the workflow run, on the lines they name.
    The check runs carry them to the PR's commit; these are seen on the run that made it."""
    for result in results:
        for c in result["clusters"]:
            _annotate_checks(c)
            _annotate_verification(c)


def _annotate_checks(c: ClusterResult) -> None:
    for check in c["checks"]:
        if not check["ok"]:
            report = gha.warning if annotation_level(check) == "warning" else gha.error
            report(check["message"], title=f"maple / {c['cluster']}: {check['name']}", file=c["path"],
                   line=check.get("line"))


def _annotate_verification(c: ClusterResult) -> None:
    if c["verification"] in ("failed", "error"):
        gha.error(c.get("note") or f"verification {c['verification']}",
                  title=f"maple / {c['cluster']}: verification", file=c["path"])
