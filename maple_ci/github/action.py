"""The Action's entry point: the event GitHub Actions ran us for, planned, then carried out.

`maple action` (cli.py) calls run_action with the real pipeline (pipeline.Pipeline) and the
repository's configuration; tests call it with stand-ins.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Iterable, Mapping

from maple_ci.errors import MapleError
from maple_ci.github.bot import Done, PortFn, VerifyFn, results_as_given, run_plan
from maple_ci.github.config import Schedule
from maple_ci.github.delivery import conclusion, connect
from maple_ci.github.events import plan_event

# Worst first: a cluster's status is the worst of its scripts'.
SEVERITY = ("failure", "neutral", "success")
SECRETS = ("MAPLE_GITLAB_TRIGGER_TOKEN", "MAPLE_GITLAB_TOKEN", "MAPLE_LLM_API_KEY")


def run_action(
    port: PortFn,
    known_clusters: Iterable[str],
    tracked: Iterable[str] = (),
    targets: Iterable[str] = (),
    env: Mapping[str, str] = os.environ,
    pace: bool = True,
    verify: VerifyFn = results_as_given,
    report: Schedule | None = None,
    config_error: str | None = None,
) -> int:
    """The exit code: 0 done or nothing to do, 1 a check or verification failed, 2 an invalid command.
    `config_error`: why the repository's configuration could not be read; a request is answered with
    it instead of being run, then it is raised (a comment with no /maple command is left alone)."""
    name, path = env.get("GITHUB_EVENT_NAME"), env.get("GITHUB_EVENT_PATH")
    if not name or not path:
        raise MapleError("GITHUB_EVENT_NAME and GITHUB_EVENT_PATH must be set (GitHub Actions sets both).")
    with open(path, encoding="utf-8") as f:
        payload = json.load(f)
    plan = plan_event(name, payload, known_clusters, tracked, targets)
    if config_error is not None:
        if plan.command is not None or plan.reply is not None:
            plan = replace(plan, reason="the configuration is invalid", command=None, reaction="confused",
                           reply=f"maple-ci cannot run: its configuration is invalid.\n\n```\n{config_error}\n```\n\n"
                                 "Fix it on the default branch, then ask again.")
        elif name != "issue_comment":  # push and schedule are the bot's own events: a broken config fails them
            raise MapleError(config_error)
    if plan.command is None and plan.reply is None:
        print(f"maple: {plan.reason}", flush=True)
        return 0  # no token needed, no request made: most events end here
    for secret in SECRETS:  # secrets: masks already; a value passed any other way is masked too
        if env.get(secret):
            print(f"::add-mask::{env[secret]}", flush=True)
    repo = connect(env.get("GITHUB_TOKEN"), env.get("GITHUB_API_URL"), pace=pace).get_repo(env["GITHUB_REPOSITORY"])
    done = run_plan(repo, plan, port, env.get("GITHUB_STEP_SUMMARY"), verify, report)
    if config_error is not None:
        raise MapleError(config_error)
    write_outputs(done, env.get("GITHUB_OUTPUT"))
    failed = any(conclusion(c) == "failure" for r in done.results for c in r["clusters"])
    return plan.exit_code or (1 if failed else 0)


def cluster_status(done: Done) -> dict[str, str]:
    """{cluster: "success" | "neutral" | "failure"}, the check-run conclusion, worst over its scripts."""
    status: dict[str, str] = {}
    for result in done.results:
        for c in result["clusters"]:
            found = [s for s in (status.get(c["cluster"]), conclusion(c)) if s]
            status[c["cluster"]] = min(found, key=SEVERITY.index)
    return status


def write_outputs(done: Done, path: str | None) -> None:
    """The action's outputs (pr-number, pr-url, status), appended to GITHUB_OUTPUT."""
    if not path:
        return
    outputs = {
        "pr-number": str(done.pr.number) if done.pr else "",
        "pr-url": done.pr.html_url if done.pr else "",
        "status": json.dumps(cluster_status(done), sort_keys=True),
    }
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(f"{key}={value}\n" for key, value in outputs.items())  # single-line values only
