"""The Action's entry point: the event GitHub Actions ran us for, planned, then carried out.

`maple action` (cli.py) calls apply_inputs, then run_action with the real pipeline
(pipeline.Pipeline) and the repository's configuration; tests call it with stand-ins. The
workflow-command side (inputs, masks, outputs, log groups, annotations, the job summary) goes
through github-action-toolkit, which reads the Actions environment from os.environ.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Iterable

import github_action_toolkit as gha

from maple_ci.errors import MapleError
from maple_ci.github.bot import Done, PortFn, VerifyFn, results_as_given, run_plan
from maple_ci.github.config import Config, Schedule
from maple_ci.github.checks import conclusion, failing
from maple_ci.github.delivery import connect
from maple_ci.github.events import Plan, plan_event
from maple_ci.github.markdown import block_fence
from maple_ci.github.report import report_error
from maple_ci.github.thread import run_url

# Worst first: a cluster's status is the worst of its scripts'.
SEVERITY = ("failure", "neutral", "success")
# The action's inputs -> the settings maple-ci reads (as the CLI does). action.yml passes each input
# as INPUT_<NAME> with `_` for `-`: composite actions get no INPUT_ variables of their own
# (actions/runner#665), and a shell cannot name one with a dash.
INPUT_SETTINGS = {
    "github_token": "GITHUB_TOKEN", "config": "MAPLE_CONFIG", "targets": "MAPLE_TARGETS", "backend": "MAPLE_BACKEND",
    "gitlab_url": "MAPLE_GITLAB_URL", "gitlab_project": "MAPLE_GITLAB_PROJECT",
    "gitlab_trigger_token": "MAPLE_GITLAB_TRIGGER_TOKEN", "gitlab_token": "MAPLE_GITLAB_TOKEN",
    "llm": "MAPLE_LLM", "llm_model": "MAPLE_LLM_MODEL", "llm_api_key": "MAPLE_LLM_API_KEY",
    "verify_timeout": "MAPLE_VERIFY_TIMEOUT",  # seconds each verification run may take (pipeline.run_backend)
}
SECRET_INPUTS = ("github_token", "gitlab_trigger_token", "gitlab_token", "llm_api_key")


def apply_inputs() -> None:
    """The action's inputs as maple-ci's settings in os.environ; secrets are masked before anything
    else is printed. An empty input leaves the setting as it was."""
    for name, setting in INPUT_SETTINGS.items():
        value = gha.get_user_input(name)
        if value:
            if name in SECRET_INPUTS:
                gha.add_mask(value)
            os.environ[setting] = value


def run_action(
    port: PortFn,
    known_clusters: Iterable[str],
    tracked: Iterable[str] = (),
    targets: Iterable[str] = (),
    pace: bool = True,
    verify: VerifyFn = results_as_given,
    report: Schedule | None = None,
    config_error: str | None = None,
    settings: Config | None = None,
) -> int:
    """The exit code: 0 done or nothing to do, 1 a check or verification failed, 2 an invalid command.
    `settings`: the repository's .github/maple.yml (its `schedule` unless `report` is given).
    `config_error`: why the repository's configuration could not be read; a request is answered with
    it instead of being run, then it is raised (a comment with no /maple command is left alone)."""
    env = os.environ
    name, payload = _event(env)
    if config_error is not None and _own_run_on_default(name, payload):
        _report_config_error(env, name, config_error, pace)
    plan = _config_refused(plan_event(name, payload, known_clusters, tracked, targets), name, config_error)
    if plan.idle:
        print(f"maple: {plan.reason}", flush=True)
        return 0  # no token needed, no request made: most events end here
    repo = connect(env.get("GITHUB_TOKEN"), env.get("GITHUB_API_URL"), pace=pace).get_repo(env["GITHUB_REPOSITORY"])
    done = run_plan(repo, plan, port, verify, report, settings)
    if config_error is not None:
        raise MapleError(config_error)
    _set_outputs(env, done)
    return plan.exit_code or _failed_code(done)


def _event(env) -> tuple[str, dict]:
    """The name and payload of the event Actions ran us for."""
    name, path = env.get("GITHUB_EVENT_NAME"), env.get("GITHUB_EVENT_PATH")
    if not name or not path:
        raise MapleError("GITHUB_EVENT_NAME and GITHUB_EVENT_PATH must be set (GitHub Actions sets both).")
    with open(path, encoding="utf-8") as f:
        return name, json.load(f)


def _own_run_on_default(event_name: str, payload: dict) -> bool:
    """A nightly run, or a push to the default branch: the bot's own runs, which no thread asked for."""
    if event_name == "schedule":
        return True
    default = (payload.get("repository") or {}).get("default_branch")
    return event_name == "push" and payload.get("ref") == f"refs/heads/{default}" and not payload.get("deleted")


def _report_config_error(env, event_name: str, config_error: str, pace: bool) -> None:
    """The invalid configuration on the report issue, where push and nightly failures go (the
    settings' own report title cannot be read: the default one), then the job fails with it."""
    repo = connect(env.get("GITHUB_TOKEN"), env.get("GITHUB_API_URL"), pace=pace).get_repo(env["GITHUB_REPOSITORY"])
    fence = block_fence(config_error)
    run = run_url()
    report_error(repo, Config().schedule,
                 f"maple-ci could not run on {event_name}: its configuration is invalid.\n\n{fence}text\n{config_error}\n"
                 f"{fence}\n\nFix it on the default branch; the next push or nightly run reads it again."
                 + (f"\n\nLog: {run}" if run else ""))
    raise MapleError(config_error)


def _config_refused(plan: Plan, event_name: str, config_error: str | None) -> Plan:
    """With an invalid configuration, a request is answered with why instead of being run; push and
    schedule are the bot's own events: a broken configuration fails them."""
    if config_error is None:
        return plan
    if not plan.idle:
        return replace(plan, reason="the configuration is invalid", command=None, reaction="confused",
                       reply=f"maple-ci cannot run: its configuration is invalid.\n\n```\n{config_error}\n```\n\n"
                             "Fix it on the default branch, then ask again.")
    if event_name != "issue_comment":
        raise MapleError(config_error)
    return plan


def _set_outputs(env, done: Done) -> None:
    """The action's outputs, where the workflow reads them (GITHUB_OUTPUT)."""
    if not env.get("GITHUB_OUTPUT"):
        return
    for key, value in outputs(done).items():
        gha.set_output(key, value)


def _failed_code(done: Done) -> int:
    """1 when a check or verification failed, else 0."""
    return 1 if failing(done.results) else 0


def cluster_status(done: Done) -> dict[str, str]:
    """{cluster: "success" | "neutral" | "failure"}, the check-run conclusion, worst over its scripts."""
    status: dict[str, str] = {}
    for result in done.results:
        for c in result["clusters"]:
            found = [s for s in (status.get(c["cluster"]), conclusion(c)) if s]
            status[c["cluster"]] = min(found, key=SEVERITY.index)
    return status


def outputs(done: Done) -> dict[str, str]:
    """The action's outputs: pr-number, pr-url, status."""
    return {
        "pr-number": str(done.pr.number) if done.pr else "",
        "pr-url": done.pr.html_url if done.pr else "",
        "status": json.dumps(cluster_status(done), sort_keys=True),
    }
