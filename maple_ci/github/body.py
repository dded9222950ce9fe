"""The bot PR's title and description (a status table per ported script), across requests.

One PR collects every request on a branch (`/maple port perlmutter`, then `/maple port aurora`):
its description keeps, in a hidden comment, what earlier requests reported, so the new body
describes every (script, cluster) on the branch, not only the last request's.
"""

from __future__ import annotations

import re
from typing import Any

from maple_ci.github.checks import checks_passed
from maple_ci.github.delivery import BODY_LIMIT, TITLE_LIMIT, SourceResult, check_failed, truncate
from maple_ci.github.markdown import cell, code, plain
from maple_ci.github.state import State, write_state

# A link the bot may render: GitHub's own https URL of the request (a comment or a commit), from
# the event payload; anything else is shown as text.
_REQUEST_URL = re.compile(r"https://[A-Za-z0-9.-]+(?::[0-9]+)?/[A-Za-z0-9._~%/#=&+-]*")
_LOG_URL = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]+)?/[A-Za-z0-9._~%/#=&?+-]*")  # a backend's job page
STOPPED = "<!-- maple-ci stopped -->"
FOOTER = """---
**Working with maple-ci** (`/maple help` lists every command and option)
- `/maple verify` runs verification of the ported scripts again; `/maple port <cluster>...` adds clusters.
- **On push** of a tracked launch script to the default branch, maple-ci regenerates these files and updates
  this PR; **nightly** it verifies the merged ports and keeps one dashboard issue up to date.
- **Close** this PR and maple-ci leaves it closed: a push does not reopen or recreate it. Reopen it to resume.
- `/maple ignore <cluster|file>` stops porting that cluster or script here; `/maple unignore` undoes it.
- A commit of yours on this branch stops maple-ci from updating it, so your work is never overwritten;
  `/maple recreate` discards those commits and ports again."""


def merged(earlier: list[SourceResult], results: list[SourceResult]) -> list[SourceResult]:
    """Earlier results updated by this request's, by (script, cluster): a cluster ported again is
    replaced, one not ported again is kept as it was reported."""
    by_source = {r["source"]: r for r in earlier}
    for result in results:
        before = by_source.get(result["source"], {"clusters": []})["clusters"]
        by_source[result["source"]] = {**result, "clusters": _not_ported_again(before, result["clusters"]) + list(result["clusters"])}
    return list(by_source.values())


def _not_ported_again(before: list, fresh: list) -> list:
    """The earlier clusters this request did not port again."""
    ported = {c["cluster"] for c in fresh}
    return [c for c in before if c["cluster"] not in ported]


def describe(state: State, results: list[SourceResult], banner: str = "") -> str:
    """The PR body: `banner` (why the bot stopped updating the branch), every script on the branch,
    the footer, and the state (earlier results merged with these) that the next request reads."""
    everything = merged(list(state.results), results)
    text = (f"{STOPPED}\n{banner}\n\n" if banner else "") + render_pr_body(everything) + "\n" + FOOTER
    hidden = "\n" + write_state(state._replace(results=everything)) + "\n"
    if len(text) + len(hidden) > BODY_LIMIT:
        hidden = "\n" + write_state(state._replace(results=[])) + "\n"  # the next request describes only itself
    return truncate(text, BODY_LIMIT - len(hidden)) + hidden


def title_for(earlier: list[SourceResult], results: list[SourceResult], prefix: str = "maple:") -> str:
    """`<prefix> port <scripts> to <clusters>`, on one line and within GitHub's 256 characters."""
    everything = merged(earlier, results)
    sources = ", ".join(sorted({" ".join(r["source"].split()) for r in everything}))
    clusters = ", ".join(dict.fromkeys(c["cluster"] for r in everything for c in r["clusters"]))
    head, tail = f"{prefix} port ".lstrip(), f" to {clusters}"
    room = TITLE_LIMIT - len(head) - len(tail)
    return head + (sources if len(sources) <= room else sources[: room - 1] + "…") + tail


# Shown in the PR body, in this order, from the JobIntent.
INTENT_FIELDS = ("source_cluster", "scheduler", "launcher", "framework", "strategy", "nodes", "gpus_per_node",
                 "world_size", "entrypoint", "script_args", "walltime", "modules", "configs")
VERIFICATION_MARKS = {"pending": "⏳", "passed": "✅", "failed": "❌", "error": "❌", "skipped": "⏭️"}


def render_pr_body(results: list[SourceResult]) -> str:
    """The PR description: a status table per ported script and what was extracted from it."""
    parts = ["Launch scripts ported by maple-ci.", ""]
    for result in results:
        parts += [f"### {code(result['source'])}", ""] + _provenance_lines(result) + _status_table(result["clusters"])
        parts += _notes_lines(result) + _intent_lines(result["intent"])
    return "\n".join(parts)


def _provenance_lines(result: SourceResult) -> list[str]:
    """Where the script was ported from and who asked (a fork's commit, a merged PR's)."""
    source = result.get("provenance")
    if not source:
        return []
    return [f"Ported from {code(source['repository'])} at {code(source['commit'])}, "
            f"requested in {request_link(source['request'])}.", ""]


def _status_table(clusters: list) -> list[str]:
    return ["| Cluster | Script | Template | Static checks | Verification | Log |",
            "|---|---|---|---|---|---|"] + [_status_row(c) for c in clusters]


def _status_row(c) -> str:
    verification = f"{VERIFICATION_MARKS.get(c['verification'], '')} {c['verification']}".strip()
    log = f"[log]({c['log_url']})" if c["log_url"] else "—"
    template = cell(code(c["template"])) if c["template"].strip() else "—"
    return f"| {c['cluster']} | {cell(code(c['path']))} | {template} | {_checks_cell(c)} | {verification} | {log} |"


def _checks_cell(c) -> str:
    mark = "✅" if all(check["ok"] for check in c["checks"]) else "❌"
    return f"{mark} {checks_passed(c)}"


def _notes_lines(result: SourceResult) -> list[str]:
    """Each cluster's note, then the script's notes, as a list."""
    notes = [f"{c['cluster']}: {c['note']}" for c in result["clusters"] if c.get("note")] + result.get("notes", [])
    return [""] + [f"- {plain(note)}" for note in notes] if notes else []


def _intent_lines(intent: dict) -> list[str]:
    """What was extracted, folded away; the fields that were not found and took defaults."""
    parts = ["", "<details><summary>What was extracted</summary>", "", "| Field | Value |", "|---|---|"]
    parts += [f"| {name} | {cell(code(_show(intent[name])))} |" for name in INTENT_FIELDS if intent.get(name) not in (None, [], {})]
    parts += ["", "</details>", ""]
    if intent.get("missing"):
        parts += [f"**Not found in the script:** {plain(', '.join(map(str, intent['missing'])))}; defaults were used.", ""]
    return parts


# Per cluster in the reply to a request: a mark and what happened.
REPLY_MARKS = {"passed": "✅", "failed": "❌", "error": "❌", "skipped": "⏭️", "pending": "⏳"}


def reply_for(url: str, results: list[SourceResult]) -> str:
    """The reply in the thread: the PR, then per script and cluster what happened, failures first."""
    lines = [f"Ported in {url}"] + [f"- {_outcome(r, c)}" for r, c in _failures_first(results)]
    lines += [f"- {plain(note)}" for r in results for note in r.get("notes", [])]
    return "\n".join(lines)


def _failures_first(results: list[SourceResult]) -> list[tuple]:
    """(script, cluster) pairs, failed and errored runs first, otherwise in order."""
    rows = [(r, c) for r in results for c in r["clusters"]]
    rows.sort(key=lambda rc: rc[1]["verification"] not in ("failed", "error"))
    return rows


def _outcome(result: SourceResult, c) -> str:
    what = _verification_text(c) + _suggestion_text(c) + _failed_checks_text(c)
    return f"{REPLY_MARKS.get(c['verification'], '')} {c['cluster']} ({code(c['path'])}): {what}"


def _verification_text(c) -> str:
    """The verification's verdict; a failure links its log, a committed fix says so."""
    if c.get("fixed") and not c["suggestions"]:
        return "passed with the debug agent's fix, committed to the PR"
    if c["verification"] in ("failed", "error") and c["log_url"]:
        return f"{c['verification']} ({link('log', c['log_url'])})"
    return c["verification"]


def _suggestion_text(c) -> str:
    return "; a fix is suggested in the PR's review" if c["suggestions"] else ""


def _failed_checks_text(c) -> str:
    failing = [k["name"] for k in c["checks"] if check_failed(k)]
    return f"; static checks failed: {plain(', '.join(failing))}" if failing else ""


def link(label: str, url: str) -> str:
    """A Markdown link to a URL of the allowlisted shape (a backend's job page), else the URL as text."""
    return f"[{label}]({url})" if _LOG_URL.fullmatch(url) else code(url)


def request_link(request: str) -> str:
    """Where the port was asked for: a link to GitHub's page of it, else the text as a code span."""
    if not _REQUEST_URL.fullmatch(request):
        return code(request)
    return f"[{'this comment' if '#issuecomment-' in request else 'this commit'}]({request})"


def _show(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(map(str, value))
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)
