"""A port on the bot's PR, as maintainers expect of Dependabot and Renovate: a person's commit on
the branch stops the bot (never overwritten), a PR closed without merging stays closed for push
and nightly runs, a fix whose re-run passed is committed (`fixes: commit`), one review per PR,
and `/maple ignore` remembered in the PR's state (state.py)."""

from __future__ import annotations

import re
from typing import Callable

from github.PullRequest import PullRequest
from github.Repository import Repository

from maple_ci.github.approval import Provenance, stamp, trailers
from maple_ci.github.body import STOPPED, describe, link, reply_for, title_for
from maple_ci.github.checks import check_runs, verified
from maple_ci.github.commands import BotCommand
from maple_ci.github.config import Config, PullRequests
from maple_ci.github.delivery import SourceResult, closed_pr, deliver, edit_pr, open_pr, post_review
from maple_ci.github.events import Plan
from maple_ci.github.markdown import code, plain
from maple_ci.github.quota import at_limit, waiting_text
from maple_ci.github.state import State, apply_edits, digest, read_state, with_fix, write_state

AUTOMATIC = ("push", "schedule")  # the bot's own triggers; a comment is a person asking
_STATE = re.compile(r"<!-- maple-ci state [A-Za-z0-9_=-]+ -->")

Published = tuple[list[SourceResult], str, PullRequest | None]


def publish(repo: Repository, plan: Plan, command: BotCommand, results: list[SourceResult], base: str,
            source: Provenance, from_fork: bool, verify: Callable[[list[SourceResult], str], list[SourceResult]],
            settings: Config) -> Published:
    """Deliver a port (PR, verification, fixes, review, check runs); the results, the reply and the PR.
    `verify(results, commit)` verifies with check runs on `commit`."""
    assert plan.key is not None
    _stamp_provenance(results, source, from_fork)
    existing = open_pr(repo, plan.key, base)
    closed = _left_closed(repo, plan, base, existing)
    if closed is not None:
        return results, (f"maple-ci leaves #{closed.number} closed: it was closed without merging. "
                         "Reopen it to let maple-ci refresh it again."), None
    if existing is None and plan.trigger in AUTOMATIC and at_limit(repo, settings.pull_requests):
        return results, waiting_text(settings.pull_requests), None
    state = _earlier_state(existing, command, results)
    title = title_for(list(state.results), results, settings.pull_requests.title_prefix)
    delivered = deliver(repo, plan.key, _ported_files(results), base, title, describe(state, results), trailers(source),
                        title_for(list(state.results), results, settings.pull_requests.commit_prefix), command.recreate)
    stopped = _stopped_early(repo, delivered, state, base, settings)
    if stopped is not None:
        return results, stopped, delivered.pr
    results = verify(results, delivered.sha)
    _review(repo, (plan.key, delivered.pr), base, results, state, (delivered.sha, title), settings)
    return results, _verified_reply(repo, plan, results, delivered.pr, (base, source, from_fork)), delivered.pr


def _ported_files(results: list[SourceResult]) -> dict[str, str]:
    """{path: content} of every ported script."""
    return {c["path"]: c["content"] for r in results for c in r["clusters"]}


def _verified_reply(repo: Repository, plan: Plan, results: list[SourceResult], pr: PullRequest,
                    origin: tuple[str, Provenance, bool]) -> str:
    """The reply once verified; on the source PR itself (not a fork's) the verdicts also go to its head,
    where the contributor looks. `origin`: the base, the provenance and whether it is a fork's."""
    base, source, from_fork = origin
    on_source_pr = plan.pull_number is not None and plan.key == f"pr-{plan.pull_number}"
    if on_source_pr and not from_fork:
        check_runs(repo, source.commit, results)
    return reply_for(pr.html_url, results) + (_into(base, from_fork) if on_source_pr else "")


def _review(repo: Repository, where: tuple[str, PullRequest], base: str, results: list[SourceResult], state: State,
            head: tuple[str, str],
            settings: Config) -> None:
    """After verification: the passing fixes committed (when configured), the PR body, the review;
    `where` is the request key and its PR."""
    (key, pr), (sha, title) = where, head
    if settings.fixes == "commit":
        sha, state = _commit_fixes(repo, key, base, results, state, settings.pull_requests.commit_prefix, head)
    edit_pr(pr, title, describe(state, results))
    post_review(pr, sha, _suggestions(results))


def _suggestions(results: list[SourceResult]) -> list[dict]:
    return [s for r in results for c in r["clusters"] for s in c["suggestions"]]


def _stamp_provenance(results: list[SourceResult], source: Provenance, from_fork: bool) -> None:
    for result in results:
        result["provenance"] = source._asdict()
        if from_fork:  # what verification reads back, wherever the file goes
            for c in result["clusters"]:
                c["content"] = stamp(c["content"], source)


def _left_closed(repo: Repository, plan: Plan, base: str, existing: PullRequest | None) -> PullRequest | None:
    """With no open PR, the one a person closed without merging, which an automatic refresh leaves closed."""
    if existing is not None or plan.trigger not in AUTOMATIC:
        return None
    return closed_pr(repo, plan.key, base)


def _earlier_state(existing: PullRequest | None, command: BotCommand, results: list[SourceResult]) -> State:
    """The open PR's state; each script generated as before gets its committed fix again (the branch
    keeps it, and it is what runs)."""
    state = read_state(existing.body) if existing else State()
    if command.recreate:
        state = state._replace(fixes={})
    for r in results:
        for c in r["clusters"]:
            c["content"] = with_fix(c["content"], state.fixes.get(c["path"]))
    return state


def _stopped_early(repo: Repository, delivered, state: State, base: str, settings: Config) -> str | None:
    """The reply when nothing is to be verified: no PR needed, a person's commits on the branch, or
    the branch already holds these files verified. None: go on."""
    if delivered.pr is None:
        return f"The ported scripts are already on {code(base)}; no PR needed."
    if delivered.foreign:
        return _stopped(delivered.pr, delivered.foreign, state)
    if delivered.opened:
        _dress(delivered.pr, settings.pull_requests)
    return _unchanged(repo, delivered)


def _unchanged(repo: Repository, delivered) -> str | None:
    """The reply when the branch already holds these files, verified, with their review and check runs."""
    if not delivered.committed and verified(repo, delivered.sha):
        return f"Ported in {delivered.pr.html_url} (unchanged)"
    return None


def _into(base: str, from_fork: bool) -> str:
    if from_fork:
        return f"\n\nIt targets {code(base)}: a fork's branch cannot take a PR from this repository."
    return f"\n\nIt targets {code(base)}, this PR's branch: merging it adds the ported scripts to this PR."


def _commit_fixes(repo: Repository, key: str, base: str, results: list[SourceResult], state: State, prefix: str,
                  head: tuple[str, str]) -> tuple[str, State]:
    """Commit the debug agent's fixes whose re-run passed (as pre-commit.ci commits its fixes), with
    check runs on that commit; the new head and the state that keeps the fixes at the next refresh."""
    sha, title = head
    fixed = _fixed(results)
    if not fixed:
        return sha, state
    clusters = ", ".join(dict.fromkeys(c["cluster"] for c in fixed))
    delivered = deliver(repo, key, _fixed_files(fixed), base, title, describe(state, results),
                        commit_title=f"{prefix} apply the debug agent's fix that passed on {clusters}".lstrip())
    fixes = dict(state.fixes)
    for c in fixed:
        _keep_fix(fixes, c)
        c.update(note=f"The first run failed; the debug agent's fix ({_why(c)}) passed when run again and is "
                      f"committed in {delivered.sha[:12]}.")
        c.update(content=c["fixed"], verification="passed", suggestions=[])
    check_runs(repo, delivered.sha, results)
    return delivered.sha, state._replace(fixes=fixes)


def _fixed(results: list[SourceResult]) -> list:
    """The results (per cluster) whose debug agent's fix passed when run again."""
    return [c for r in results for c in r["clusters"] if c.get("fixed")]


def _fixed_files(fixed: list) -> dict[str, str]:
    return {c["path"]: c["fixed"] for c in fixed}


def _keep_fix(fixes: dict[str, list], c) -> None:
    """Remember the fix as its edits when they give the fixed script (the next refresh reapplies them)."""
    edits = [[s["start_line"], s["line"], s["body"]] for s in c["suggestions"]]
    if apply_edits(c["content"], edits) == c["fixed"]:
        fixes[c["path"]] = [digest(c["content"]), edits]


def propose_fixes(repo: Repository, base: str, results: list[SourceResult], settings: Config) -> None:
    """Nightly: one PR per cluster with the debug agent's fixes whose re-run passed (opened, or
    updated; one closed without merging is not proposed again); each fixed script's result links it."""
    by_cluster: dict[str, list] = {}
    for c in _fixed(results):
        by_cluster.setdefault(c["cluster"], []).append(c)
    for cluster, fixed in by_cluster.items():
        key = f"fix-{cluster}"
        if _declined(repo, key, base) or (open_pr(repo, key, base) is None and at_limit(repo, settings.pull_requests)):
            continue
        title = f"{settings.pull_requests.title_prefix} fix {', '.join(c['path'] for c in fixed)} on {cluster}".lstrip()
        delivered = deliver(repo, key, _fixed_files(fixed), base, title, _fix_body(cluster, fixed),
                            commit_title=f"{settings.pull_requests.commit_prefix} fix {cluster}".lstrip())
        if delivered.opened:
            _dress(delivered.pr, settings.pull_requests)
        _link_fix_pr(fixed, delivered.pr)


def _declined(repo: Repository, key: str, base: str) -> bool:
    """No open PR for `key`, and one closed without merging: the fix was declined."""
    return open_pr(repo, key, base) is None and closed_pr(repo, key, base) is not None


def _fix_body(cluster: str, fixed: list) -> str:
    lines = [f"The nightly verification failed on {cluster}; the debug agent's fix passed when run again.", ""]
    lines += [_fix_line(c) for c in fixed]
    lines += ["", "Close this PR to decline the fix: maple-ci does not propose it again."]
    return "\n".join(lines)


def _fix_line(c) -> str:
    log = f" ({link('log of the failing run', c['log_url'])})" if c["log_url"] else ""
    return f"- {code(c['path'])}: {plain(_why(c))}" + log


def _link_fix_pr(fixed: list, pr: PullRequest | None) -> None:
    """Each fixed script's result links the PR that proposes its fix."""
    if pr is None:
        return
    for c in fixed:
        c["fix_pr"] = pr.html_url


def _why(c) -> str:
    return "; ".join(dict.fromkeys(s["message"] for s in c["suggestions"] if s.get("message"))) or "see the diff"


def _stopped(pr: PullRequest, foreign: tuple[str, ...], state: State) -> str:
    """Say, once, in the PR that the bot stopped updating its branch and how to resume; the reply."""
    banner = (f"**maple-ci has stopped updating this branch**: commit(s) {_shown(foreign)} are not its own, and it never "
              "overwrites your work. Comment `/maple recreate` here to discard them and port again.")
    if STOPPED not in (pr.body or ""):
        edit_pr(pr, pr.title, describe(state, [], banner))
        pr.create_issue_comment(banner)
    return f"Not updated: {pr.html_url} has commits by others.\n\n{banner}"


def _shown(foreign: tuple[str, ...]) -> str:
    """The first five commits, short."""
    return ", ".join(code(sha[:12]) for sha in foreign[:5]) + (" and more" if len(foreign) > 5 else "")


def _dress(pr: PullRequest, settings: PullRequests) -> None:
    """Labels, reviewers and assignees from `.github/maple.yml`, on a PR just opened."""
    if settings.labels:
        # The documented body ({"labels": [...]}); PyGithub's add_to_labels sends the bare array form.
        pr.requester.requestJsonAndCheck("POST", f"{pr.issue_url}/labels", input={"labels": settings.labels})
    if settings.reviewers:
        pr.create_review_request(reviewers=settings.reviewers)
    if settings.assignees:
        pr.add_to_assignees(*settings.assignees)


def set_ignored(repo: Repository, key: str, base: str, command: BotCommand) -> str:
    """`/maple ignore` / `/maple unignore`: the ignored clusters and files, kept in the PR's state; the reply."""
    pr = open_pr(repo, key, base)
    names = command.clusters + command.files
    if pr is None:
        return "There is no open maple-ci PR for this request: nothing to ignore or unignore yet."
    state = read_state(pr.body)
    if command.name == "ignore":
        ignore = tuple(dict.fromkeys(state.ignore + names))
        reply = (f"Ignored {', '.join(map(code, names))} in {pr.html_url}: maple-ci does not port them there any more. "
                 f"{code('/maple unignore ' + ' '.join(names))} undoes it.")
    else:
        ignore = _unignored(state.ignore, names)
        reply = f"maple-ci ports {_named(names)} again in {pr.html_url}."
    pr.edit(body=_STATE.sub("", pr.body or "").rstrip() + "\n" + write_state(state._replace(ignore=ignore)) + "\n")
    return reply


def _unignored(ignored: tuple[str, ...], names: tuple[str, ...]) -> tuple[str, ...]:
    """What stays ignored after `/maple unignore names` (no names: nothing)."""
    return tuple(n for n in ignored if names and n not in names)


def _named(names: tuple[str, ...]) -> str:
    return ", ".join(map(code, names)) if names else "everything"
