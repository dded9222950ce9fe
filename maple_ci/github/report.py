"""The nightly "Portability report" issue: one per repository, opened on the first regression,
kept up to date while anything fails, closed when everything passes again."""

from __future__ import annotations

from pathlib import PurePosixPath
from urllib.parse import quote

from github.Repository import Repository

from maple_ci.github.config import Schedule
from maple_ci.github.checks import conclusion, failing
from maple_ci.github.delivery import BODY_LIMIT, ClusterResult, SourceResult, truncate
from maple_ci.github.markdown import cell, code, plain

# Finds the bot's own issue again whatever account the token belongs to; people do not write it.
MARKER = "<!-- maple-ci portability report -->"
CELLS = {"success": "✅ pass", "failure": "❌ fail", "neutral": "⏭️ not run"}


def render_report(results: list[SourceResult], blob_url: str, commit: str) -> str:
    """A matrix: one row per script name, one column per cluster; each cell links the file and its log.

    blob_url: the repository's web address + "/blob" (files are linked at `commit`)."""
    cells = _report_cells(results, blob_url, commit)
    clusters = sorted({cluster for row in cells.values() for cluster in row})
    lines = [MARKER, f"Nightly verification of the ported scripts at {commit[:12]}.", "",
             "| Script | " + " | ".join(clusters) + " |", "|---|" + "---|" * len(clusters)]
    lines += [_report_row(name, row, clusters) for name, row in sorted(cells.items())]
    notes = _failure_notes(results)
    return "\n".join(lines + ([""] + notes if notes else []))


def _report_cells(results: list[SourceResult], blob_url: str, commit: str) -> dict[str, dict[str, str]]:
    """{script name: {cluster: cell}}."""
    cells: dict[str, dict[str, str]] = {}
    for result in results:
        for c in result["clusters"]:
            cells.setdefault(PurePosixPath(c["path"]).stem, {})[c["cluster"]] = _report_cell(c, blob_url, commit)
    return cells


def _failure_notes(results: list[SourceResult]) -> list[str]:
    """One line per failed result that says why."""
    return [f"- {code(c['path'])}: {plain(c['note'])}" for r in results for c in r["clusters"] if _failure_note(c)]


def _report_cell(c: ClusterResult, blob_url: str, commit: str) -> str:
    """The verdict linking the ported file, then links to its log and its fix PR where there are."""
    # The path is percent-encoded: a `)` or space in a file name must not end the link.
    shown = f"[{CELLS[conclusion(c)]}]({blob_url}/{commit}/{quote(c['path'])})"
    if c["log_url"]:
        shown += f" · [log]({c['log_url']})"
    if c.get("fix_pr"):
        shown += f" · [fix]({c['fix_pr']})"
    return shown


def _report_row(name: str, row: dict[str, str], clusters: list[str]) -> str:
    return f"| {cell(code(name))} | " + " | ".join(row.get(cluster, "—") for cluster in clusters) + " |"


def _failure_note(c: ClusterResult) -> bool:
    """Whether the result failed and says why."""
    return conclusion(c) == "failure" and bool(c.get("note"))


def _open_report(repo: Repository, settings: Schedule):
    return next((i for i in repo.get_issues(state="open", labels=settings.labels)
                 if i.title == settings.report_issue_title and MARKER in (i.body or "")), None)


def report_error(repo: Repository, settings: Schedule, text: str) -> None:
    """A push's or nightly run's failure, as a comment on the report issue (opened for it if none
    is): no thread asked, and a job summary is read by nobody."""
    issue = _open_report(repo, settings) or repo.create_issue(
        settings.report_issue_title, body=f"{MARKER}\nmaple-ci's runs on push and nightly report here.", labels=settings.labels)
    issue.create_comment(truncate(text, BODY_LIMIT))


def sync_report(repo: Repository, settings: Schedule, results: list[SourceResult], commit: str):
    """Open, update or close the report issue; the issue touched, or None when all pass and none is open."""
    body = render_report(results, f"{repo.html_url}/blob", commit)
    issue = _open_report(repo, settings)
    if issue is None:
        return repo.create_issue(settings.report_issue_title, body=body, labels=settings.labels) if failing(results) else None
    if not failing(results):
        issue.edit(body=body, state="closed", state_reason="completed")
    elif issue.body != body:
        issue.edit(body=body)
    return issue
