"""jacamar backend: verify on a center's HPC-hosted runner (GitLab + Jacamar CI).

maple-ci triggers a pipeline of the center-side project (workflows/gitlab/maple-verify.gitlab-ci.yml)
with a pipeline trigger token, polls it with an `api` token, and maps the job trace to pass/fail.
It sends only what the center's job accepts, as the pipeline's typed inputs (spec:inputs, GitLab
17.11+), never variables: the cluster, the mini-app, the script's path and the full id of the
commit that holds it. The center checks out that commit and derives the scheduler
options (SCHEDULER_PARAMETERS, which Jacamar's batch executors submit with) from the committed
script itself, capped by the site; a trigger that sends them is refused. So the center verifies
the committed port, never a file of the same name on another branch.

GitLab REST endpoints used (API v4):
  POST /projects/:id/trigger/pipeline                 token, ref, inputs (JSON)
  GET  /projects/:id/pipelines/:pipeline_id           status, web_url
  GET  /projects/:id/pipelines/:pipeline_id/jobs      the job, for its trace
  GET  /projects/:id/jobs/:job_id/trace               the log, plain text
  POST /projects/:id/pipelines/:pipeline_id/cancel    at the timeout, or when maple-ci is stopped
                                                      (needs the api scope; read_api cannot cancel)
"""

import re
import time
from typing import Callable, Optional
from urllib.parse import quote

import requests

from ..attestation import sign
from ..errors import MapleError
from ..miniapp_result import parse_result
from .cancel import cancellable, wait
from .substitute import VerifyResult

TERMINAL = {"success", "failed", "canceled", "skipped", "manual"}
POLL_SECONDS = 10.0  # the first wait between two polls; it grows to 120 s
FULL_COMMIT = re.compile(r"[0-9a-f]{40}")  # what the center accepts as MAPLE_COMMIT


class _GitLab:
    """The four calls, with retries on 5xx and connection errors and a clear error otherwise."""

    def __init__(self, url: str, project: str, api_token: Optional[str], session: requests.Session,
                 sleep: Callable[[float], None], retries: int = 4):
        self.base = f"{url.rstrip('/')}/api/v4/projects/{quote(str(project), safe='')}"
        self.headers = {"PRIVATE-TOKEN": api_token} if api_token else {}
        self.session, self.sleep, self.retries = session, sleep, retries

    def call(self, method: str, path: str, retries: Optional[int] = None, **kwargs) -> requests.Response:
        delay, retries = 1.0, self.retries if retries is None else retries
        for attempt in range(retries + 1):
            try:
                response = self.session.request(method, self.base + path, headers=self.headers, timeout=30, **kwargs)
            except requests.ConnectionError as exc:
                if attempt == retries:
                    raise MapleError(f"GitLab at {self.base} is unreachable: {exc}", exit_code=1) from exc
            else:
                if response.status_code < 500 or attempt == retries:
                    break
            self.sleep(delay)
            delay *= 2
        if response.status_code >= 400:
            raise MapleError(f"GitLab answered {response.status_code} to {method} {path}: {response.text[:300]}", exit_code=1)
        return response


def verify_jacamar(
    script_path: str,
    *,
    cluster: str,
    miniapp: str,
    gitlab_url: str,
    project: str,
    trigger_token: str,
    api_token: Optional[str] = None,
    ref: str = "main",
    commit: Optional[str],
    signing_key: Optional[str] = None,
    timeout: float = 3600,
    poll_interval: Optional[float] = None,
    session: Optional[requests.Session] = None,
    sleep: Callable[[float], None] = wait,
) -> VerifyResult:
    """Trigger the center-side pipeline for the script at script_path (a path in the repository)
    in `commit` (its full id), and wait for its verdict. A pipeline still running after `timeout`
    seconds is cancelled. `signing_key` (MAPLE_SIGNING_KEY): the bot signs the request, which is what
    lets the center run a commit of its maple/port-* branches (maple_ci/attestation.py)."""
    _require_settings(script_path, gitlab_url, project, trigger_token, commit)
    gitlab = _GitLab(gitlab_url, project, api_token, session or requests.Session(), sleep)
    # Typed inputs, not variables: the center's CI file declares them (spec:inputs), GitLab checks
    # them, and a center that lets no one set pipeline variables accepts nothing else.
    inputs = {"cluster": cluster, "script": str(script_path), "miniapp": miniapp, "commit": commit}
    if signing_key:
        inputs["attestation"] = sign(signing_key, str(commit), str(script_path))
    pipeline = gitlab.call("POST", "/trigger/pipeline", json={"token": trigger_token, "ref": ref, "inputs": inputs}).json()
    pipeline_id, web_url = pipeline["id"], pipeline.get("web_url", "")

    def cancel() -> None:
        gitlab.call("POST", f"/pipelines/{pipeline_id}/cancel", retries=0)

    with cancellable(cancel):
        status = _poll(gitlab, pipeline_id, pipeline.get("status", "created"), time.monotonic() + timeout,
                       poll_interval or POLL_SECONDS, sleep)
        if status not in TERMINAL:
            return _timed_out(cancel, pipeline_id, status, timeout, web_url)
    return _pipeline_result(gitlab, pipeline_id, status, web_url)


def _require_settings(script_path: str, gitlab_url: str, project: str, trigger_token: str, commit: Optional[str]) -> None:
    if not (gitlab_url and project and trigger_token):
        raise MapleError("the jacamar backend needs MAPLE_GITLAB_URL, MAPLE_GITLAB_PROJECT and MAPLE_GITLAB_TRIGGER_TOKEN")
    if not FULL_COMMIT.fullmatch(commit or ""):
        # The center refuses anything else; without the commit it could only guess which file to run.
        raise MapleError(f"the jacamar backend needs the full id (40 hex digits) of the commit that holds "
                         f"{script_path} (--commit), not {commit!r}")


def _poll(gitlab: _GitLab, pipeline_id, status: str, deadline: float, interval: float,
          sleep: Callable[[float], None]) -> str:
    """The pipeline's status once it is terminal, or its last one at the deadline."""
    while status not in TERMINAL:
        left = deadline - time.monotonic()
        if left <= 0:
            return status
        sleep(min(interval, left))
        interval = min(interval * 1.5, 120)  # back off: queues on big machines are slow
        status = gitlab.call("GET", f"/pipelines/{pipeline_id}").json()["status"]
    return status


def _timed_out(cancel: Callable[[], None], pipeline_id, status: str, timeout: float, web_url: str) -> VerifyResult:
    """Cancels the pipeline still running at the timeout, and says so."""
    try:
        cancel()
        cancelled = "cancelled"
    except MapleError as error:
        cancelled = f"could not be cancelled ({error})"
    return VerifyResult(ok=False, backend="jacamar", state="timeout", job_id=str(pipeline_id), log_url=web_url,
                        message=f"pipeline {pipeline_id} still {status} after {timeout:.0f} s, {cancelled}; see {web_url}")


def _pipeline_result(gitlab: _GitLab, pipeline_id, status: str, web_url: str) -> VerifyResult:
    """The verdict of a finished pipeline, from its status and the mini-app's result line in its jobs' logs."""
    jobs = gitlab.call("GET", f"/pipelines/{pipeline_id}/jobs").json()
    log = "".join(gitlab.call("GET", f"/jobs/{job['id']}/trace").text for job in jobs)
    result = parse_result(log)
    ok = status == "success" and bool(result and result.get("ok"))
    message = f"pipeline {pipeline_id} {status}" + ("" if ok else "; the mini-app did not report success")
    return VerifyResult(ok=ok, backend="jacamar", state=status, job_id=str(pipeline_id), log=log,
                        result=result, log_url=web_url, message=message)
