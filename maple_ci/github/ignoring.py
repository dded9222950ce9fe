"""What maple-ci does not port where, and how a maintainer undoes it: `/maple ignore` (kept in the bot
PR's state), `ignore:` in .github/maple.yml, and a bot PR closed without merging, whose scripts push and
nightly runs leave alone (as Renovate ignores the one update whose PR was closed, and says so)."""

from __future__ import annotations

import os
import re

from github.PullRequest import PullRequest
from github.Repository import Repository

from maple_ci.github.body import describe, title_for
from maple_ci.github.commands import BotCommand, did_you_mean
from maple_ci.github.config import DEFAULT_PATH, Config
from maple_ci.github.delivery import SourceResult, deliver, edit_pr, newest_closed_pr, open_pr
from maple_ci.github.markdown import code
from maple_ci.github.state import State, read_state, write_state

_STATE = re.compile(r"<!-- maple-ci state [A-Za-z0-9_=-]+ -->")
CLOSED = "<!-- maple-ci closed -->"  # the closed PR was told what its closing means


def config_path() -> str:
    """Where the repository's settings are read from (the action's `config` input)."""
    return os.environ.get("MAPLE_CONFIG") or DEFAULT_PATH


def undo(names: tuple[str, ...], settings: Config) -> str:
    """How to port `names` again: `/maple unignore` for those ignored in the PR, the settings file for the others."""
    here = tuple(n for n in names if n not in settings.ignore)
    there = [n for n in names if n in settings.ignore]
    said = [f"{code('/maple unignore ' + ' '.join(here))} undoes it"] if here else []
    if there:
        said.append(f"{', '.join(map(code, there))} {'is' if len(there) == 1 else 'are'} ignored in "
                    f"{code(config_path())} (`ignore:`): remove {'it' if len(there) == 1 else 'them'} there to port again")
    return "; ".join(said)


def earlier_state(repo: Repository, key: str, base: str, automatic: bool) -> State:
    """What the bot's PR for `key` remembers: the open PR's state; with none open, on push and nightly,
    the ignores the newest closed PR leaves (closed_ignores)."""
    existing = open_pr(repo, key, base)
    if existing is not None:
        return read_state(existing.body)
    return State(ignore=closed_ignores(repo, key, base)) if automatic else State()


def closed_ignores(repo: Repository, key: str, base: str) -> tuple[str, ...]:
    """The newest closed PR's ignores and, when it was closed without merging, its scripts: closing a
    PR declines those ports only (other scripts still get a PR). The closed PR is told so, once."""
    closed = newest_closed_pr(repo, key, base)
    if closed is None:
        return ()
    state = read_state(closed.body)
    if closed.merged:
        return state.ignore
    sources = tuple(r["source"] for r in state.results)
    _tell_closed(closed, sources)
    return tuple(dict.fromkeys(state.ignore + sources))


def _tell_closed(pr: PullRequest, sources: tuple[str, ...]) -> None:
    """Say on the closed PR, once, what closing it did and how to undo it."""
    if CLOSED in (pr.body or ""):
        return
    scripts = ", ".join(map(code, sources)) or "its scripts"
    notice = (f"**maple-ci leaves this PR closed**: pushes and nightly runs no longer port {scripts}; other launch "
              f"scripts still get a PR. To undo it, reopen this PR, or comment "
              f"{code('/maple unignore ' + ' '.join(sources))} on maple-ci's next PR.")
    pr.edit(body=f"{CLOSED}\n{notice}\n\n{pr.body or ''}")
    pr.create_issue_comment(notice)


def set_ignored(repo: Repository, key: str, base: str, command: BotCommand, settings: Config) -> tuple[str, bool]:
    """`/maple ignore` / `/maple unignore`: the ignored clusters and files, kept in the PR's state; the
    reply and whether it was done as asked."""
    pr = open_pr(repo, key, base)
    if pr is None:
        return "There is no open maple-ci PR for this request: nothing to ignore or unignore yet.", False
    state, names = read_state(pr.body), command.clusters + command.files
    if command.name == "unignore":
        return _unignore(pr, state, names, settings)
    return _ignore(repo, (key, base, pr), state, names, settings)


def _unignore(pr: PullRequest, state: State, names: tuple[str, ...], settings: Config) -> tuple[str, bool]:
    """Names ignored in the PR are ported again; for those the settings ignore, the reply says where."""
    in_settings = tuple(n for n in (names or settings.ignore) if n in settings.ignore)
    freed = tuple(n for n in names if n not in in_settings)
    if names and not freed:
        return f"Not changed: {undo(in_settings, settings)}.", False
    _write_state(pr, state._replace(ignore=tuple(n for n in state.ignore if freed and n not in freed)))
    said = f"maple-ci ports {', '.join(map(code, freed)) if freed else 'everything'} again in {pr.html_url}."
    return said + (f" Still ignored: {undo(in_settings, settings)}." if in_settings else ""), True


def _ignore(repo: Repository, where: tuple[str, str, PullRequest], state: State, names: tuple[str, ...],
            settings: Config) -> tuple[str, bool]:
    """Remember the names and take their ports out of the PR (files and rows); refused for a name the
    PR does not hold, with the nearest one it does."""
    pr = where[2]
    held = _held(state.results)
    unknown = [n for n in names if n not in held]
    if unknown:
        return " ".join(f"{code(n)} is not ported in {pr.html_url}{did_you_mean(n, held)}" for n in unknown), False
    state = state._replace(ignore=tuple(dict.fromkeys(state.ignore + names)))
    removed = _remove_ports(repo, where, state, names, settings)
    if removed is None:
        _write_state(pr, state)
        kept = "its branch has commits by others, so its files stay: delete them there or `/maple recreate`"
    else:
        kept = f"removed {', '.join(map(code, removed))} from it"
    return f"Ignored {', '.join(map(code, names))} in {pr.html_url}: maple-ci does not port them there any more, " \
           f"and {kept}. {undo(names, settings)}.", True


def _held(results: list[SourceResult]) -> tuple[str, ...]:
    """The clusters and scripts the PR holds ports of."""
    return tuple(dict.fromkeys([c["cluster"] for r in results for c in r["clusters"]] + [r["source"] for r in results]))


def _remove_ports(repo: Repository, where: tuple[str, str, PullRequest], state: State, names: tuple[str, ...],
                  settings: Config) -> list[str] | None:
    """Delete the ports of `names` from the bot's branch and their rows from the PR; the paths removed,
    or None when others' commits on the branch stop the bot (nothing changed)."""
    key, base, pr = where
    gone = [c["path"] for r in state.results for c in r["clusters"] if _named(r, c, names)]
    kept = [{**r, "clusters": [c for c in r["clusters"] if not _named(r, c, names)]} for r in state.results]
    state = state._replace(results=[r for r in kept if r["clusters"]])
    title = title_for(state.results, [], settings.pull_requests.title_prefix)
    delivered = deliver(repo, key, dict.fromkeys(gone), base, title, describe(state, []),
                        commit_title=f"{settings.pull_requests.commit_prefix} stop porting {' '.join(names)}".lstrip())
    if delivered.foreign:
        return None
    edit_pr(pr, title, describe(state, []))
    return gone


def _named(result: SourceResult, c, names: tuple[str, ...]) -> bool:
    return c["cluster"] in names or result["source"] in names


def _write_state(pr: PullRequest, state: State) -> None:
    pr.edit(body=_STATE.sub("", pr.body or "").rstrip() + "\n" + write_state(state) + "\n")
