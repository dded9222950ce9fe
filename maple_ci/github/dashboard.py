"""The portability dashboard: one issue per repository, as Renovate's Dependency Dashboard.

A row per tracked script and target cluster: where it is ported, when and at which commit it was
last verified, since when it fails, and the fix PR. Checkboxes ask for a port, a retry, a
recreate or an ignore; ticking one is an `issues.edited` event that events.plan_event turns into
the command (ticks.py). The nightly run updates the same issue, never a new one, and closes the
nightly fix PRs of a cluster that passes again without them. What the bot remembers (each row,
the ignored rows) is a hidden marker in the issue body, like a PR's state (state.py).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from fnmatch import fnmatch
from pathlib import PurePosixPath
from urllib.parse import quote

from github.Repository import Repository

from maple_ci.github.checks import conclusion
from maple_ci.github.commands import BotCommand
from maple_ci.github.config import Config
from maple_ci.github.delivery import SourceResult, open_pr
from maple_ci.github.markdown import cell, code, plain
from maple_ci.github.quota import held_back_text, open_bot_prs
from maple_ci.github.report import MARKER, open_report
from maple_ci.github.pipeline import generated_from
from maple_ci.github.state import pack, unpack
from maple_ci.github.ticks import box
from maple_ci.github.trend import nightly_trend, read_trend, render_trend, trend_marker

_STATE = re.compile(r"<!-- maple-ci dashboard ([A-Za-z0-9_=-]+) -->")
SHOWN = {"success": "✅ passed", "failure": "❌ failed", "neutral": "⏭️ not run"}
_ROW_FIELDS = ("path", "status", "at", "commit", "log", "since", "fix", "note")
NOTE_LIMIT = 300  # characters of why a row fails


def row_key(source: str, cluster: str) -> str:
    return f"{source}\t{cluster}"


def origin(c) -> str:
    """The source script a ported script was generated from (its own path when it does not say)."""
    found = generated_from(c.get("content") or "")
    return found[0] if found else c["path"]


# --- the hidden state ---

def read_rows(body: str | None) -> tuple[dict[str, dict], list[str]]:
    """The rows and ignored row keys a dashboard body keeps; empty when there are none or they are damaged."""
    found = _STATE.findall(body or "")
    data = unpack(found[-1]) if found else None
    if not (isinstance(data, dict) and _rows_ok(data.get("rows")) and _strings(data.get("ignored"))):
        return {}, []
    return data["rows"], data["ignored"]


def _rows_ok(rows) -> bool:
    return isinstance(rows, dict) and all(isinstance(k, str) and _row_ok(r) for k, r in rows.items())


def _row_ok(row) -> bool:
    return isinstance(row, dict) and set(row) == set(_ROW_FIELDS) and all(v is None or isinstance(v, str) for v in row.values())


def _strings(values) -> bool:
    return isinstance(values, list) and all(isinstance(v, str) for v in values)


def _marker(rows: dict[str, dict], ignored: list[str]) -> str:
    return f"<!-- maple-ci dashboard {pack({'rows': rows, 'ignored': ignored})} -->"


# --- a night's results into rows ---

def nightly_rows(rows: dict[str, dict], results: list[SourceResult], commit: str, day: str) -> dict[str, dict]:
    """The rows after a verification at `commit` on `day`: a failure keeps the day it began."""
    rows = dict(rows)
    for r in results:
        for c in r["clusters"]:
            key = row_key(origin(c), c["cluster"])
            rows[key] = _verified_row(rows.get(key), c, commit, day)
    return rows


def _verified_row(old: dict | None, c, commit: str, day: str) -> dict:
    status = conclusion(c)
    failing = status == "failure"
    since = old["since"] if old and old["status"] == "failure" else None
    return {"path": c["path"], "status": status, "at": day, "commit": commit[:12], "log": c.get("log_url"),
            "since": (since or f"{day} at {commit[:12]}") if failing else None,
            "fix": c.get("fix_pr") if failing else None, "note": (c.get("note") or "")[:NOTE_LIMIT] if failing else None}


def without_ignored(results: list[SourceResult], ignored: list[str]) -> list[SourceResult]:
    """The results less the ignored rows (a result left with no cluster is dropped)."""
    kept = []
    for r in results:
        clusters = [c for c in r["clusters"] if row_key(origin(c), c["cluster"]) not in ignored]
        if clusters:
            kept.append({**r, "clusters": clusters})
    return kept


def close_green_fixes(repo: Repository, base: str, results: list[SourceResult], commit: str) -> list[str]:
    """Close each open nightly fix PR whose cluster passed everything tonight without it; the clusters."""
    closed = []
    for cluster in sorted({c["cluster"] for r in results for c in r["clusters"]}):
        found = [conclusion(c) for r in results for c in r["clusters"] if c["cluster"] == cluster]
        pr = open_pr(repo, f"fix-{cluster}", base) if "failure" not in found else None
        if pr is not None:
            pr.create_issue_comment(f"The nightly verification passed on {cluster} at {code(commit[:12])} without this fix: "
                                    "maple-ci closes it as no longer needed.")
            pr.edit(state="closed")
            closed.append(cluster)
    return closed


# --- rendering ---

def render(rows: dict[str, dict], ignored: list[str], wanted: list[tuple[str, str]], blob_url: str,
           prs: tuple[list[str], str | None] = ([], None), trend: dict[str, list[list]] | None = None) -> str:
    """The issue body. `wanted`: the (script, cluster) pairs the configuration asks for; `prs`: the
    open maple-ci PRs as Markdown links, and why automatic PRs wait (quota.held_back_text) if they do;
    `trend`: the nightly speed per cluster (trend.py)."""
    links, held_back = prs
    missing = [(s, c) for s, c in wanted if row_key(s, c) not in rows and row_key(s, c) not in ignored]
    shown = {k: r for k, r in rows.items() if k not in ignored}
    lines = [MARKER, "**maple-ci portability dashboard**: one row per tracked launch script and target cluster. "
             "Tick a box to ask for it; maple-ci answers in a comment here.", "",
             *([f"**Open maple-ci PRs**: {', '.join(links)}", ""] if links else []),
             *([held_back, ""] if held_back else []), "| Script | Cluster | Ported | Last verified | Failing since | Fix PR |", "|---|---|---|---|---|---|"]
    lines += [_row_line(k, r, blob_url) for k, r in sorted(shown.items())]
    lines += [f"| {cell(code(s))} | {c} | not yet | — | — | — |" for s, c in missing]
    notes = [f"- {code(_source(k))} on {_cluster(k)}: {plain(r['note'])}" for k, r in sorted(shown.items()) if r["note"]]
    lines += ["", "### Why it fails", *notes] if notes else []
    lines += render_trend(trend or {})
    lines += ["", "### Actions", *_action_boxes(shown, missing)]
    if ignored:
        lines += ["", "### Ignored", *_boxes((("unignore", _cluster(k), _source(k)),
                                              f"Port and verify {code(_source(k))} on {_cluster(k)} again") for k in sorted(ignored))]
    return "\n".join(lines + ["", _marker(rows, ignored)] + ([trend_marker(trend)] if trend else [])) + "\n"


def _source(key: str) -> str:
    return key.split("\t")[0]


def _cluster(key: str) -> str:
    return key.split("\t")[1]


def _row_line(key: str, r: dict, blob_url: str) -> str:
    ported = f"[{code(r['path'])}]({blob_url}/{r['commit']}/{quote(r['path'])})" if r["commit"] else code(r["path"])
    verified = f"{SHOWN.get(r['status'], r['status'])} {r['at']} at {code(r['commit'])}" if r["at"] else "—"
    if r["log"]:
        verified += f" · [log]({r['log']})"
    fix = f"[fix PR]({r['fix']})" if r["fix"] else "—"
    return f"| {cell(code(_source(key)))} | {_cluster(key)} | {ported} | {verified} | {r['since'] or '—'} | {fix} |"


def _action_boxes(rows: dict[str, dict], missing: list[tuple[str, str]]) -> list[str]:
    """Port what is not ported, retry a failing cluster, recreate a cluster's ports, ignore a row."""
    failing = sorted({_cluster(k) for k, r in rows.items() if r["status"] == "failure"})
    clusters = sorted({_cluster(k) for k in rows})
    boxes = [(("port", c, "--from", s), f"Port {code(s)} to {c}") for s, c in missing]
    boxes += [(("verify", c), f"Retry the verification on {c}") for c in failing]
    boxes += [(("recreate", c), f"Recreate the ports to {c} from the default branch, discarding edits on maple-ci's branch")
              for c in clusters]
    boxes += [(("ignore", _cluster(k), _source(k)), f"Ignore {code(_source(k))} on {_cluster(k)}") for k in sorted(rows)]
    return _boxes(boxes) or ["Nothing to do yet: the first nightly run fills this in."]


def _boxes(commands) -> list[str]:
    """The boxes for (command words, label) pairs; a command a box cannot carry gets none (`/maple` still can)."""
    return [b for b in (box(words, label) for words, label in commands) if b is not None]


# --- the issue ---

def wanted_pairs(repo: Repository, config: Config, ref: str) -> list[tuple[str, str]]:
    """(script, cluster) for each tracked script on `ref` and each target cluster not ignored."""
    if not config.sources or not config.targets:
        return []
    tree = repo.get_git_tree(ref, recursive=True).tree  # GitHub takes a branch name for its tree
    scripts = sorted(e.path for e in tree if e.type == "blob" and _tracked(e.path, config))
    return [(s, c) for s in scripts for c in config.targets if c not in config.ignore]


def _tracked(path: str, config: Config) -> bool:
    return not PurePosixPath(path).is_relative_to(config.output) and any(fnmatch(path, g) for g in config.sources)


def sync_dashboard(repo: Repository, config: Config, base: str, results: list[SourceResult] | None = None,
                   commit: str = "", now: datetime | None = None):
    """Open or update the dashboard; with a night's `results` (verified at `commit`), its rows too,
    and the fix PRs of clusters green again closed. The issue."""
    issue = open_report(repo, config.schedule)
    rows, ignored = read_rows(issue.body if issue else None)
    trend = read_trend(issue.body if issue else None)
    if results is not None:
        day = (now or datetime.now(timezone.utc)).date().isoformat()
        rows = nightly_rows(rows, results, commit, day)
        trend = nightly_trend(trend, results, day)
        close_green_fixes(repo, base, results, commit)
    body = _drawn(repo, config, base, rows, ignored, trend)
    if issue is None:
        return repo.create_issue(config.schedule.report_issue_title, body=body, labels=config.schedule.labels)
    if issue.body != body:
        issue.edit(body=body)
    return issue


def _drawn(repo: Repository, config: Config, base: str, rows: dict[str, dict], ignored: list[str],
           trend: dict[str, list[list]]) -> str:
    prs = open_bot_prs(repo)
    links = [f"[#{pr.number}]({pr.html_url}) {plain(pr.title)}" for pr in prs]
    return render(rows, ignored, wanted_pairs(repo, config, base), f"{repo.html_url}/blob",
                  (links, held_back_text(len(prs), config.pull_requests)), trend)


def ignored_rows(repo: Repository, config: Config) -> list[str]:
    """The row keys ticked as ignored on the dashboard."""
    issue = open_report(repo, config.schedule)
    return read_rows(issue.body if issue else None)[1]


def set_ignored_rows(repo: Repository, config: Config, base: str, command: BotCommand) -> str:
    """A dashboard ignore/unignore box: `command` names a cluster and a script; the reply."""
    issue = open_report(repo, config.schedule)
    rows, ignored = read_rows(issue.body if issue else None)
    keys = [row_key(f, c) for f in command.files for c in command.clusters]
    if command.name == "ignore":
        ignored = sorted(set(ignored) | set(keys))
        text = "maple-ci no longer verifies or proposes fixes for"
    else:
        ignored = [k for k in ignored if k not in keys]
        text = "maple-ci verifies again"
    if issue is not None:
        issue.edit(body=_drawn(repo, config, base, rows, ignored, read_trend(issue.body)))
    return f"{text} {', '.join(f'{code(_source(k))} on {_cluster(k)}' for k in keys) or plain('nothing named')}."
