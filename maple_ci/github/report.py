"""Finding the dashboard issue (dashboard.py renders it), and posting a push's or nightly run's
failure there: no thread asked for those runs, and a job summary is read by nobody."""

from __future__ import annotations

from github.Repository import Repository

from maple_ci.github.config import Schedule
from maple_ci.github.delivery import BODY_LIMIT, truncate
from maple_ci.github.events import DASHBOARD_MARKER as MARKER  # finds the bot's own issue, whatever account it is


def open_report(repo: Repository, settings: Schedule):
    """The bot's open dashboard issue, or None."""
    return next((i for i in repo.get_issues(state="open", labels=settings.labels)
                 if i.title == settings.report_issue_title and MARKER in (i.body or "")), None)


def report_error(repo: Repository, settings: Schedule, text: str) -> None:
    """A push's or nightly run's failure, as a comment on the report issue (opened for it if none
    is): no thread asked, and a job summary is read by nobody."""
    issue = open_report(repo, settings) or repo.create_issue(
        settings.report_issue_title, body=f"{MARKER}\nmaple-ci's runs on push and nightly report here.", labels=settings.labels)
    issue.create_comment(truncate(text, BODY_LIMIT))
