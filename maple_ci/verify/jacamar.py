"""jacamar backend: verify on a center's HPC-hosted runner (GitLab + Jacamar CI).

maple-ci triggers a pipeline of the center-side project (workflows/gitlab/maple-verify.gitlab-ci.yml)
with a pipeline trigger token, polls it with a read token, and maps the job trace to pass/fail.
Jacamar's batch executors take the scheduler options from SCHEDULER_PARAMETERS, not from the
script's #SBATCH/#PBS lines, so those are derived from the generated script here.

GitLab REST endpoints used (API v4):
  POST /projects/:id/trigger/pipeline                 token, ref, variables[KEY]
  GET  /projects/:id/pipelines/:pipeline_id           status, web_url
  GET  /projects/:id/pipelines/:pipeline_id/jobs      the job, for its trace
  GET  /projects/:id/jobs/:job_id/trace               the log, plain text
"""

import shlex
import time
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import quote

import requests

from ..errors import MapleError
from ..miniapp_result import parse_result
from .substitute import VerifyResult

TERMINAL = {"success", "failed", "canceled", "skipped", "manual"}
_DIRECTIVE_PREFIXES = ("#SBATCH", "#PBS")


def scheduler_parameters(script: str) -> str:
    """The script's directive options as one SCHEDULER_PARAMETERS string (sbatch/qsub syntax)."""
    options = []
    for line in script.splitlines():
        stripped = line.strip()
        if stripped.startswith(_DIRECTIVE_PREFIXES):
            words = shlex.split(stripped, comments=False)[1:]
            options.extend(word for word in words if not word.startswith("#"))
        elif stripped and not stripped.startswith("#"):
            break  # like sbatch, directives after the first command are ignored
    return shlex.join(options)


class _GitLab:
    """The four calls, with retries on 5xx and connection errors and a clear error otherwise."""

    def __init__(self, url: str, project: str, api_token: Optional[str], session: requests.Session,
                 sleep: Callable[[float], None], retries: int = 4):
        self.base = f"{url.rstrip('/')}/api/v4/projects/{quote(str(project), safe='')}"
        self.headers = {"PRIVATE-TOKEN": api_token} if api_token else {}
        self.session, self.sleep, self.retries = session, sleep, retries

    def call(self, method: str, path: str, **kwargs) -> requests.Response:
        delay = 1.0
        for attempt in range(self.retries + 1):
            try:
                response = self.session.request(method, self.base + path, headers=self.headers, timeout=30, **kwargs)
            except requests.ConnectionError as exc:
                if attempt == self.retries:
                    raise MapleError(f"GitLab at {self.base} is unreachable: {exc}", exit_code=1) from exc
            else:
                if response.status_code < 500 or attempt == self.retries:
                    break
            self.sleep(delay)
            delay *= 2
        if response.status_code >= 400:
            raise MapleError(f"GitLab answered {response.status_code} to {method} {path}: {response.text[:300]}", exit_code=1)
        return response


def verify_jacamar(
    script_path: Path,
    *,
    cluster: str,
    miniapp: str,
    gitlab_url: str,
    project: str,
    trigger_token: str,
    api_token: Optional[str] = None,
    ref: str = "main",
    commit: Optional[str] = None,
    timeout: float = 3600,
    poll_interval: float = 10,
    session: Optional[requests.Session] = None,
    sleep: Callable[[float], None] = time.sleep,
) -> VerifyResult:
    """Trigger the center-side pipeline for one generated script and wait for its verdict."""
    if not (gitlab_url and project and trigger_token):
        raise MapleError("the jacamar backend needs MAPLE_GITLAB_URL, MAPLE_GITLAB_PROJECT and MAPLE_GITLAB_TRIGGER_TOKEN")
    script = Path(script_path).read_text()
    gitlab = _GitLab(gitlab_url, project, api_token, session or requests.Session(), sleep)
    variables = {
        "MAPLE_CLUSTER": cluster,
        "MAPLE_SCRIPT": str(script_path),
        "MAPLE_MINIAPP": miniapp,
        "MAPLE_COMMIT": commit or "",
        "SCHEDULER_PARAMETERS": scheduler_parameters(script),
    }
    form = {"token": trigger_token, "ref": ref, **{f"variables[{k}]": v for k, v in variables.items()}}
    pipeline = gitlab.call("POST", "/trigger/pipeline", data=form).json()
    pipeline_id, web_url = pipeline["id"], pipeline.get("web_url", "")

    waited, interval, status = 0.0, poll_interval, pipeline.get("status", "created")
    while status not in TERMINAL:
        if waited >= timeout:
            return VerifyResult(ok=False, backend="jacamar", state="timeout", job_id=str(pipeline_id), log_url=web_url,
                                message=f"pipeline {pipeline_id} still {status} after {timeout:.0f} s; see {web_url}")
        sleep(interval)
        waited += interval
        interval = min(interval * 1.5, 120)  # back off: queues on big machines are slow
        status = gitlab.call("GET", f"/pipelines/{pipeline_id}").json()["status"]

    jobs = gitlab.call("GET", f"/pipelines/{pipeline_id}/jobs").json()
    log = "".join(gitlab.call("GET", f"/jobs/{job['id']}/trace").text for job in jobs)
    result = parse_result(log)
    ok = status == "success" and bool(result and result.get("ok"))
    message = f"pipeline {pipeline_id} {status}" + ("" if ok else "; the mini-app did not report success")
    return VerifyResult(ok=ok, backend="jacamar", state=status, job_id=str(pipeline_id), log=log,
                        result=result, log_url=web_url, message=message)
