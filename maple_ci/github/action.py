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
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

import github_action_toolkit as gha

from maple_ci.errors import MapleError
from maple_ci.github import trace_job

if TYPE_CHECKING:
    from maple_ci.github.pipeline import Pipeline
from maple_ci.github.bot import Done, PortFn, VerifyFn, results_as_given, run_plan
from maple_ci.github.config import DEFAULT_PATH, Config, Schedule, load_config
from maple_ci.github.checks import conclusion, failing
from maple_ci.github.delivery import connect
from maple_ci.github.events import Plan, plan_event
from maple_ci.github.onboarding import EVENTS as ONBOARDING_EVENTS, onboard
from maple_ci.github.report import report_error
from maple_ci.init_config import Proposal, propose

# Worst first: a cluster's status is the worst of its scripts'.
SEVERITY = ("failure", "neutral", "success")
# The action's inputs -> the settings maple-ci reads (as the CLI does). action.yml passes each input
# as INPUT_<NAME> with `_` for `-`: composite actions get no INPUT_ variables of their own
# (actions/runner#665), and a shell cannot name one with a dash.
INPUT_SETTINGS = {
    "github_token": "GITHUB_TOKEN", "config": "MAPLE_CONFIG", "targets": "MAPLE_TARGETS", "backend": "MAPLE_BACKEND",
    "gitlab_url": "MAPLE_GITLAB_URL", "gitlab_project": "MAPLE_GITLAB_PROJECT",
    "gitlab_trigger_token": "MAPLE_GITLAB_TRIGGER_TOKEN", "gitlab_token": "MAPLE_GITLAB_TOKEN",
    "signing_key": "MAPLE_SIGNING_KEY",
    "llm": "MAPLE_LLM", "llm_model": "MAPLE_LLM_MODEL", "llm_api_key": "MAPLE_LLM_API_KEY",
    "verify_timeout": "MAPLE_VERIFY_TIMEOUT",  # seconds each verification run may take (pipeline.run_backend)
    # the trace gate's jobs (github/trace_job.py): port (the default), trace or trace-report, and their data
    "mode": "MAPLE_ACTION_MODE", "trace_request": "MAPLE_TRACE_REQUEST", "trace_result": "MAPLE_TRACE_RESULT",
}
SECRET_INPUTS = ("github_token", "gitlab_trigger_token", "gitlab_token", "signing_key", "llm_api_key")


def apply_inputs() -> None:
    """The action's inputs as maple-ci's settings in os.environ; secrets are masked before anything
    else is printed. An empty input leaves the setting as it was."""
    for name, setting in INPUT_SETTINGS.items():
        value = gha.get_user_input(name)
        if value:
            if name in SECRET_INPUTS:
                gha.add_mask(value)
            os.environ[setting] = value


def run_configured(workspace: Path, known: list[str], make_pipeline: Callable[[Config], "Pipeline"],
                   pace: bool = True) -> int:
    """run_action with the configuration in `workspace` (the default branch's checkout: a PR cannot
    change what the bot may do) and the pipeline made for it; with no configuration file, the
    bot's own runs open the onboarding PR instead."""
    path = workspace / (os.environ.get("MAPLE_CONFIG") or DEFAULT_PATH)
    try:
        config, config_error = load_config(path, known, os.environ), None
    except MapleError as error:  # answered where the request came from, then the job fails with it
        config, config_error = Config(), str(error)
    pipeline = make_pipeline(config)
    onboarding = None if path.is_file() else (lambda: propose(workspace, known))
    return run_action(pipeline.port, known, config.sources, config.targets, pace=pace, verify=pipeline.verify,
                      settings=config, config_error=config_error, onboarding=onboarding)


def run_trace_mode(mode: str, workspace: Path, pace: bool = True) -> int:
    """The trace gate's jobs (github/trace_job.py): `trace`, with no token and no secret, sets its
    verdicts as the `trace-result` output; `trace-report` reads them as untrusted data into the
    `maple / trace` check run (1 when it fails)."""
    env = os.environ
    try:
        data = trace_job.checked_request(json.loads(env.get("MAPLE_TRACE_REQUEST") or "null"))
    except ValueError:
        raise MapleError("the trace-request input is not JSON", exit_code=2) from None
    if mode == "trace":
        result = json.dumps(trace_job.run_request(data, workspace), sort_keys=True)
        if env.get("GITHUB_OUTPUT"):
            gha.set_output("trace-result", result)
        return 0
    if mode == "trace-report":
        return 0 if trace_job.report(_repo(env, pace), data, env.get("MAPLE_TRACE_RESULT") or "") == "success" else 1
    raise MapleError(f"unknown mode {mode!r}: port, trace or trace-report", exit_code=2)


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
    onboarding: Callable[[], Proposal] | None = None,
) -> int:
    """The exit code: 0 done or nothing to do, 1 a check or verification failed, 2 an invalid command.
    `settings`: the repository's .github/maple.yml (its `schedule` unless `report` is given).
    `config_error`: why the repository's configuration could not be read; a request is answered with
    it instead of being run, and a push's or nightly's posts it on the dashboard; then it is raised
    (a comment with no /maple command is left alone). `onboarding`: the proposed configuration,
    given when the repository has none: the bot's own runs open the onboarding PR with it."""
    env = os.environ
    name, payload = _event(env)
    if onboarding is not None and _onboards(name, payload):
        print(f"maple: {onboard(_repo(env, pace), payload['repository']['default_branch'], onboarding())}", flush=True)
        return 0
    if config_error is not None and name != "issue_comment":
        report_error(_repo(env, pace), Schedule(), _config_text(config_error, f"The {name} run stopped"))
        raise MapleError(config_error)
    plan = _config_refused(plan_event(name, payload, known_clusters, tracked, targets), config_error)
    if plan.idle:
        print(f"maple: {plan.reason}", flush=True)
        return 0  # no token needed, no request made: most events end here
    done = run_plan(_repo(env, pace), plan, port, verify, report, settings)
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


def _onboards(name: str, payload: dict) -> bool:
    """Whether the event is one of the bot's own runs, which open the onboarding PR when there is no
    configuration: a push to the default branch, the schedule, a dispatch without a command."""
    if name == "push":
        return payload.get("ref") == f"refs/heads/{payload['repository']['default_branch']}" and not payload.get("deleted")
    return name in ONBOARDING_EVENTS and not (payload.get("inputs") or {}).get("command")


def _repo(env, pace: bool):
    return connect(env.get("GITHUB_TOKEN"), env.get("GITHUB_API_URL"), pace=pace).get_repo(env["GITHUB_REPOSITORY"])


def _config_text(config_error: str, what: str) -> str:
    """What the maintainer reads about an invalid configuration."""
    return (f"{what}: its configuration is invalid.\n\n```\n{config_error}\n```\n\n"
            "Fix it on the default branch (`maple config check` shows the same problems), then ask again.")


def _config_refused(plan: Plan, config_error: str | None) -> Plan:
    """With an invalid configuration, a comment's request is answered with why instead of being run."""
    if config_error is None or plan.idle:
        return plan
    return replace(plan, reason="the configuration is invalid", command=None, reaction="confused",
                   reply=_config_text(config_error, "maple-ci cannot run"))


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
        "trace-request": json.dumps(done.trace, sort_keys=True) if done.trace else "",
    }
