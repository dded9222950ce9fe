"""The Action's entry point: the event GitHub Actions ran us for, planned, then carried out.

`maple action` (cli.py) calls run_action with the port pipeline and the repository's settings.
"""

from __future__ import annotations

import json
import os
from typing import Iterable, Mapping

from maple_ci.errors import MapleError
from maple_ci.github.bot import PortFn, run_plan
from maple_ci.github.delivery import conclusion, connect
from maple_ci.github.events import plan_event


def run_action(
    port: PortFn,
    known_clusters: Iterable[str],
    tracked: Iterable[str] = (),
    targets: Iterable[str] = (),
    env: Mapping[str, str] = os.environ,
    pace: bool = True,
) -> int:
    """The exit code: 0 done or nothing to do, 1 a check or verification failed, 2 an invalid command."""
    name, path = env.get("GITHUB_EVENT_NAME"), env.get("GITHUB_EVENT_PATH")
    if not name or not path:
        raise MapleError("GITHUB_EVENT_NAME and GITHUB_EVENT_PATH must be set (GitHub Actions sets both).")
    with open(path, encoding="utf-8") as f:
        payload = json.load(f)
    plan = plan_event(name, payload, known_clusters, tracked, targets)
    if plan.command is None and plan.reply is None:
        print(f"maple: {plan.reason}", flush=True)
        return 0  # no token needed, no request made: most events end here
    repo = connect(env.get("GITHUB_TOKEN"), env.get("GITHUB_API_URL"), pace=pace).get_repo(env["GITHUB_REPOSITORY"])
    results = run_plan(repo, plan, port, env.get("GITHUB_STEP_SUMMARY"))
    failed = any(conclusion(c) == "failure" for r in results for c in r["clusters"])
    return plan.exit_code or (1 if failed else 0)
