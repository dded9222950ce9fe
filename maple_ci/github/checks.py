"""Check runs of a commit, one per (ported source, cluster): created in progress when a script's
verification starts, completed with its verdict; and the verdict helpers the PR body, the nightly
report and the action's exit code share."""

from __future__ import annotations

from typing import Any, Callable

from github.Repository import Repository

from maple_ci.github.delivery import ClusterResult, SourceResult, annotation_level, check_failed, truncate
from maple_ci.github.markdown import cell, code, plain

ANNOTATIONS_PER_REQUEST = 50  # GitHub's limit for one check-run create or update
CHECK_SUMMARY_LIMIT = 65535  # characters in a check run's output.summary
CHECK_RUN_PREFIX = "maple / "  # check runs are named "maple / <cluster> / <source>"


class CheckRuns:
    """The check runs of one commit, one per (source, cluster): created in_progress when a script's
    verification starts and completed at its verdict (`update`, as pipeline.Pipeline.verify reports
    them), so a PR shows what is running while a center's queue holds it; `finish` completes the
    rest. Annotations go 50 per request."""

    def __init__(self, repo: Repository, head_sha: str):
        self.repo, self.head_sha = repo, head_sha
        self.open: dict[str, Any] = {}  # name -> a run in progress
        self.completed: dict[str, Any] = {}

    def update(self, result: SourceResult, c: ClusterResult) -> None:
        name = f"{CHECK_RUN_PREFIX}{c['cluster']} / {result['source']}"
        if c["verification"] == "running":
            self.open[name] = self.repo.create_check_run(
                name=name, head_sha=self.head_sha, status="in_progress",
                output={"title": f"{result['source']} on {c['cluster']}: verifying",
                        "summary": truncate(_check_summary(c), CHECK_SUMMARY_LIMIT)})
            return
        self._complete(name, result, c)

    def _complete(self, name: str, result: SourceResult, c: ClusterResult) -> None:
        """The run `name` completed with its verdict: the one in progress edited, else a new one."""
        output = {
            "title": f"{result['source']} on {c['cluster']}: {_verdict(c)}",
            "summary": truncate(_check_summary(c), CHECK_SUMMARY_LIMIT),
        }
        batches = _batches(_annotations(c))
        fields = _completed_fields(c, output, batches)
        run = self.open.pop(name, None)
        if run is None:
            run = self.repo.create_check_run(name=name, head_sha=self.head_sha, **fields)
        else:
            run.edit(**fields)
        # Annotations from later updates are appended to the run's existing ones.
        for batch in batches[1:]:
            run.edit(output={**output, "annotations": batch})
        self.completed[name] = run

    def finish(self, results: list[SourceResult]) -> list:
        """Complete every run not completed yet; all the completed runs."""
        for result in results:
            for c in result["clusters"]:
                if f"{CHECK_RUN_PREFIX}{c['cluster']} / {result['source']}" not in self.completed:
                    self.update(result, c)
        return list(self.completed.values())

    def cancel(self, why: str) -> None:
        """Complete the runs still in progress as cancelled, saying why."""
        for name, run in list(self.open.items()):
            run.edit(status="completed", conclusion="cancelled",
                     output={"title": f"{name.removeprefix(CHECK_RUN_PREFIX)}: verification did not finish",
                             "summary": truncate(why, CHECK_SUMMARY_LIMIT)})
            del self.open[name]


def _annotations(c: ClusterResult) -> list[dict]:
    """One annotation per failed check that names its line."""
    return [
        {
            "path": c["path"],
            "start_line": check["line"],
            "end_line": check["line"],
            "annotation_level": annotation_level(check),
            "title": check["name"],
            "message": check["message"],
        }
        for check in c["checks"]
        if not check["ok"] and check.get("line")
    ]


def _batches(annotations: list[dict]) -> list[list[dict]]:
    """The annotations in the batches one request may carry."""
    return [annotations[i : i + ANNOTATIONS_PER_REQUEST] for i in range(0, len(annotations), ANNOTATIONS_PER_REQUEST)]


def _completed_fields(c: ClusterResult, output: dict, batches: list[list[dict]]) -> dict:
    """A completed run's fields: its conclusion, output with the first batch, the log's link."""
    return {
        "status": "completed",
        "conclusion": conclusion(c),
        "output": {**output, "annotations": batches[0]} if batches else output,
        **({"details_url": c["log_url"]} if c["log_url"] else {}),  # PyGithub rejects None
    }


def check_runs(repo: Repository, head_sha: str, results: list[SourceResult]) -> list:
    """One completed check run per (source, cluster) on head_sha."""
    return CheckRuns(repo, head_sha).finish(results)


def verify_with_check_runs(repo: Repository, head_sha: str, results: list[SourceResult],
                           verify: Callable[[list[SourceResult], Callable], list[SourceResult]]) -> list[SourceResult]:
    """verify(results, progress) with check runs on head_sha that follow its progress (CheckRuns);
    if it ends early (an error, SIGTERM), the runs still open are completed as cancelled."""
    runs = CheckRuns(repo, head_sha)
    try:
        results = verify(results, runs.update)
    except BaseException as error:
        runs.cancel(f"Verification ended early: {error}")
        raise
    runs.finish(results)
    return results


def verified(repo: Repository, head_sha: str) -> bool:
    """Whether head_sha already has a verdict: a completed maple check run, not a cancelled one.
    A commit without one (its request was cut short) is verified again when asked again."""
    runs = repo.get_commit(head_sha).get_check_runs(status="completed")
    return any(run.name.startswith(CHECK_RUN_PREFIX) and run.conclusion != "cancelled" for run in runs)


def conclusion(c: ClusterResult) -> str:
    """failure: a failed check or run; neutral: checks passed but nothing was run; else success."""
    failed = any(check_failed(check) for check in c["checks"])
    if failed or c["verification"] in ("failed", "error"):
        return "failure"
    return "neutral" if c["verification"] == "skipped" else "success"


def failing(results: list[SourceResult]) -> bool:
    """Whether any script failed on any cluster."""
    return any(conclusion(c) == "failure" for r in results for c in r["clusters"])


def checks_passed(c: ClusterResult) -> str:
    """"passed/total" static checks."""
    return f"{sum(check['ok'] for check in c['checks'])}/{len(c['checks'])}"


def _verdict(c: ClusterResult) -> str:
    return f"{checks_passed(c)} checks passed, verification {c['verification']}"


def _check_summary(c: ClusterResult) -> str:
    made = f"Template {code(c['template'])} → {code(c['path'])}" if c["template"].strip() else code(c["path"])
    table = ["| Check | Result | Message |", "|---|---|---|"]
    table += [_check_row(check) for check in sorted(c["checks"], key=lambda check: check["ok"])]  # what failed leads
    return "\n".join([made, ""] + _with_note(c, table) + _speed_section(c))


def _speed_section(c: ClusterResult) -> list[str]:
    """The run's speed figures (verify/speed.py) as a table, and what fails them; none without a run."""
    from maple_ci.verify.speed import Speed, rows

    if not c.get("speed"):
        return []
    speed = Speed.model_validate(c["speed"])
    table = ["", "### Speed", "", "| Figure | Value |", "|---|---|"]
    table += [f"| {cell(plain(what))} | {cell(plain(value))} |" for what, value in rows(speed)]
    return table + [f"- ❌ {plain(problem)}" for problem in speed.problems]


def _check_row(check: dict) -> str:
    where = f" (line {check['line']})" if check.get("line") else ""
    mark = "✅" if check["ok"] else "❌"
    return f"| {cell(plain(check['name']))} | {mark}{where} | {cell(plain(check['message']))} |"


def _with_note(c: ClusterResult, table: list[str]) -> list[str]:
    """The table with the result's note: before it when the result failed (what failed leads), else
    after it (why verification was skipped, e.g. waiting for an approval)."""
    note = c.get("note")
    if not note:
        return table
    if conclusion(c) == "failure":
        return [plain(note), ""] + table
    return table + ["", plain(note)]
