"""A small stateful GitLab (API v4) for the jacamar backend's tests.

It implements only the endpoints maple-ci calls, with GitLab's shapes and status codes, and runs
the jobs that workflows/gitlab/maple-verify.gitlab-ci.yml defines: their `script:` lines, in bash,
through a runner that stands in for Jacamar (a local shell, or sbatch with SCHEDULER_PARAMETERS on
the test Slurm cluster, as Jacamar's batch executor does).
"""

import atexit
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Mapping
from urllib.parse import parse_qs, unquote

import yaml

from maple_ci.verify.slurm import adapt_directives
from venvs import nested_venv

REPO = Path(__file__).resolve().parents[1]
CI_FILE = REPO / "workflows" / "gitlab" / "maple-verify.gitlab-ci.yml"

Runner = Callable[[str, dict], tuple[int, str]]  # (job script, variables) -> (exit code, trace)


JOBS = ("maple-check", "maple-verify")  # in stage order
EXAMPLE_INPUTS = {"cluster": "perlmutter", "script": "scripts/perlmutter/train.sbatch", "miniapp": "ddp",
                  "commit": "0" * 40}
# Where the shipped CI file expects the center's maple-ci venv and the gate's settings; a center
# edits them in its copy, and so does the fake (FakeGitLab's center_paths).
VENV, SETTINGS = "/opt/maple-ci/venv", "/etc/maple-ci/center.toml"


class InputError(ValueError):
    pass


def ci_config(inputs: Mapping[str, str], paths: Mapping[str, str] = {}) -> dict:
    """The CI file's jobs for a pipeline with these inputs, as GitLab makes them: each input checked
    against its `spec:inputs` entry (options, regex; an unknown or missing one is an error) and
    interpolated where the file says `$[[ inputs.<name> ]]` (https://docs.gitlab.com/ci/inputs/, read 2026-11-25)."""
    header, body = CI_FILE.read_text().split("\n---\n", 1)
    for shipped, center in paths.items():
        body = body.replace(shipped, center)
    spec = yaml.safe_load(header)["spec"]["inputs"]
    if unknown := set(inputs) - set(spec):
        raise InputError(f"unknown input arguments: {', '.join(sorted(unknown))}")
    values = {}
    for name, rule in spec.items():
        value = inputs.get(name, rule.get("default"))
        if value is None:
            raise InputError(f"`{name}` input: required value has not been provided")
        if "options" in rule and value not in rule["options"]:
            raise InputError(f"`{name}` input: `{value}` cannot be used because it is not in the list of allowed options")
        if "regex" in rule and not re.search(rule["regex"], value):
            raise InputError(f"`{name}` input: provided value does not match required RegEx pattern")
        values[name] = value
    return yaml.safe_load(re.sub(r"\$\[\[\s*inputs\.(\w+)\s*\]\]", lambda m: values[m[1]], body))


def _job(name: str, inputs: Mapping[str, str], paths: Mapping[str, str] = {}) -> dict:
    jobs = ci_config(inputs, paths)
    job = jobs[name]
    return {**jobs.get(job.get("extends", ""), {}), **job}


def job_script(name: str = "maple-verify", inputs: Mapping[str, str] = EXAMPLE_INPUTS,
               paths: Mapping[str, str] = {}) -> str:
    job = _job(name, inputs, paths)
    return "set -eo pipefail\n" + "\n".join(job.get("before_script", []) + job["script"]) + "\n"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout.strip()


def write_settings(path: Path, settings: Mapping) -> None:
    """The center's settings file (maple_ci/center/settings.py) holding `settings`, as TOML."""
    def toml(value) -> str:
        return json.dumps(list(value)) if isinstance(value, (list, tuple)) else json.dumps(value)

    path.write_text("".join(f"{key} = {toml(value)}\n" for key, value in settings.items()))


def root_only_dir() -> Path:
    """A new folder that only root can change, all the way up (under root's home: the tests run as
    root, as tests/cluster/setup.sh does), removed when the tests end."""
    folder = Path(tempfile.mkdtemp(dir=Path.home(), prefix=".maple-center-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def center_repo(tmp_path: Path, work: Path, settings: Mapping | None = None) -> dict:
    """A center as workflows/gitlab/README.md sets it up, for the files written in `work`: they are
    committed on main, a bare mirror holds them, the runner's checkout is a clone of the mirror, and
    the center's maple-ci venv is this interpreter (which has maple-ci) with the check installed;
    its settings (`settings`, by default perlmutter's) in a root-only file. The paths, the commit,
    the site's CI/CD variables, and `paths`, where its copy of the CI file finds venv and settings."""
    mirror, checkout, venv = tmp_path / "mirror.git", tmp_path / "checkout", tmp_path / "venv"
    git(work, "init", "--quiet", "-b", "main")
    git(work, "add", ".")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "port")
    git(tmp_path, "clone", "--quiet", "--bare", str(work), str(mirror))
    git(tmp_path, "clone", "--quiet", str(mirror), str(checkout))
    nested_venv(venv)
    settings_file = root_only_dir() / "center.toml"
    write_settings(settings_file, {"clusters": ["perlmutter"], "fetch_wait_seconds": 0, **(settings or {})})
    return {"work": work, "mirror": mirror, "checkout": checkout, "commit": git(work, "rev-parse", "HEAD"),
            "site": {}, "settings": settings_file, "paths": {VENV: str(venv), SETTINGS: str(settings_file)}}


def exports(variables: dict) -> str:
    """The runner puts the job's variables into the script as exports (not into the environment of
    the shell that runs it), so a shell startup variable such as BASH_ENV reaches only what the job starts."""
    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in variables.items())


def login_env(env: Mapping[str, str] = os.environ) -> dict:
    """What a runner's job starts from on a login node: the login shell's own variables and the
    site's startup file, not the test process's environment."""
    return {k: v for k, v in env.items() if k in ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "BASH_ENV")}


def shell_runner(checkout: Path, env: Mapping[str, str] = os.environ) -> Runner:
    """A shell executor: the job's script runs with bash in `checkout`."""

    def run(script: str, variables: dict) -> tuple[int, str]:
        proc = subprocess.run(["bash", "-c", exports({"CI_PIPELINE_SOURCE": "trigger", **variables}) + script],
                              cwd=checkout, env=login_env(env), capture_output=True, text=True)
        return proc.returncode, proc.stdout + proc.stderr

    return run


def sbatch_runner(checkout: Path, env: Mapping[str, str], timeout: int = 900) -> Runner:
    """Jacamar's batch executor on the local Slurm test cluster: the job's script lines, after
    exports of the pipeline's variables, are a batch file submitted from `checkout` (the project's
    working copy) with `sbatch <SCHEDULER_PARAMETERS> --wait`; the job's output is the trace.
    SCHEDULER_PARAMETERS name the target site's account, partition and walltime, which the test
    cluster lacks: they are adapted as the slurm backend adapts a script (site options dropped,
    10 minutes), as a center would have its own. env: the environment sbatch (so the job) starts from."""

    login = shell_runner(checkout, env)

    def run(script: str, variables: dict) -> tuple[int, str]:
        if variables.get("CI_JOB_NAME") != "maple-verify":
            return login(script, variables)  # the check job runs on the login node
        directive = f"#SBATCH {variables.get('SCHEDULER_PARAMETERS', '')}\n"
        options = shlex.split(adapt_directives(directive)[0].removeprefix("#SBATCH"))
        with tempfile.TemporaryDirectory(dir=checkout, prefix=".ci-job-") as scratch:
            batch, trace = Path(scratch) / "ci-job.sh", Path(scratch) / "trace"
            batch.write_text("#!/bin/bash\n" + exports({"CI_PIPELINE_SOURCE": "trigger", **variables}) + script)
            submitted = subprocess.run(["sbatch", "--wait", f"--output={trace}", "--time=10", *options, str(batch)],
                                       cwd=checkout, env=login_env(env), capture_output=True, text=True, timeout=timeout)
            output = trace.read_text(errors="replace") if trace.exists() else ""
        return submitted.returncode, submitted.stderr + output

    return run


class FakeGitLab:
    def __init__(self, runner: Runner, project: str = "hpc/maple-verify",
                 trigger_token: str = "glptt-test", api_token: str = "glpat-test", fail_first: int = 0,
                 api_scopes: tuple[str, ...] = ("api",),
                 checkout: Path | None = None, site_variables: Mapping[str, str] = {},
                 pipeline_variables: bool = False, center_paths: Mapping[str, str] = {}):
        # checkout: where the runner's jobs run, to read the dotenv report of the check job from;
        # site_variables: the project's CI/CD variables, which trigger variables override (as GitLab);
        # pipeline_variables: whether the project lets a trigger set variables (its minimum role for
        # pipeline variables is not "no one allowed", as workflows/gitlab/README.md asks);
        # center_paths: the center's venv and settings in its copy of the CI file (center_repo's paths).
        self.runner, self.project, self.checkout = runner, project, checkout
        self.center_paths = dict(center_paths)
        self.pipeline_variables = pipeline_variables
        self.site_variables = dict(site_variables)
        self.trigger_token, self.api_token = trigger_token, api_token
        self.api_scopes = api_scopes  # read_api alone may read pipelines, not cancel them
        self.fail_first = fail_first  # answer this many 502s first, to exercise retries
        self.pipelines: dict[int, dict] = {}
        self.traces: dict[int, str] = {}
        self.requests: list[tuple[str, str]] = []
        self._ids = itertools.count(1000)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()

    def _run(self, pipeline: dict, variables: dict) -> None:
        """The jobs in stage order, each after the last succeeded, one trace for the pipeline."""
        pipeline["status"] = "running"
        traces, report = [], {}
        for name in JOBS:
            job_variables = {"CI_DEFAULT_BRANCH": "main", **report, **self.site_variables,
                             **variables, "CI_JOB_NAME": name}
            pipeline["jobs"][name] = job_variables  # what each job got, e.g. the check's dotenv report
            code, trace = self.runner(job_script(name, pipeline["inputs"], self.center_paths), job_variables)
            traces.append(trace)
            if code != 0:
                break
            report = self._dotenv(name, pipeline["inputs"])
        self.traces[pipeline["job_id"]] = "".join(traces)
        if pipeline["status"] != "canceled":  # a cancelled pipeline stays cancelled, whatever its job did
            pipeline["status"] = "success" if code == 0 else "failed"

    def _dotenv(self, name: str, inputs: Mapping[str, str]) -> dict:
        path = _job(name, inputs, self.center_paths).get("artifacts", {}).get("reports", {}).get("dotenv")
        if not (path and self.checkout and (self.checkout / path).exists()):
            return {}
        lines = (self.checkout / path).read_text().splitlines()
        (self.checkout / path).unlink()
        return dict(line.split("=", 1) for line in lines if "=" in line)

    def _handler(self):
        fake = self
        prefix = re.compile(r"^/api/v4/projects/(?P<project>[^/]+)(?P<rest>/.*)$")

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def _send(self, code: int, body, content_type: str = "application/json"):
                data = (json.dumps(body) if content_type == "application/json" else body).encode()
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self, method: str):
                fake.requests.append((method, self.path))
                if fake.fail_first > 0:
                    fake.fail_first -= 1
                    return self._send(502, {"message": "502 Bad Gateway"})
                match = prefix.match(self.path)
                if not match or unquote(match["project"]) != fake.project:
                    return self._send(404, {"message": "404 Project Not Found"})
                rest = match["rest"]
                if method == "POST" and rest == "/trigger/pipeline":
                    return self._trigger()
                if self.headers.get("PRIVATE-TOKEN") != fake.api_token:
                    return self._send(401, {"message": "401 Unauthorized"})
                if m := re.fullmatch(r"/pipelines/(\d+)", rest):
                    pipeline = fake.pipelines.get(int(m[1]))
                    return self._send(200, _public(pipeline)) if pipeline else self._send(404, {"message": "404 Not found"})
                if method == "POST" and (m := re.fullmatch(r"/pipelines/(\d+)/cancel", rest)):
                    return self._cancel(int(m[1]))
                if m := re.fullmatch(r"/pipelines/(\d+)/jobs", rest):
                    pipeline = fake.pipelines[int(m[1])]
                    return self._send(200, [{"id": pipeline["job_id"], "name": "maple-verify", "status": pipeline["status"]}])
                if m := re.fullmatch(r"/jobs/(\d+)/trace", rest):
                    return self._send(200, fake.traces.get(int(m[1]), ""), "text/plain")
                return self._send(404, {"message": "404 Not found"})

            def _cancel(self, pipeline_id: int):
                # POST /projects/:id/pipelines/:pipeline_id/cancel: cancels the jobs that have not
                # finished and answers with the pipeline; a token with read_api only is refused.
                if "api" not in fake.api_scopes:
                    return self._send(403, {"error": "insufficient_scope", "scope": "api",
                                            "error_description": "The request requires higher privileges than provided by the access token."})
                pipeline = fake.pipelines.get(pipeline_id)
                if pipeline is None:
                    return self._send(404, {"message": "404 Not found"})
                if pipeline["status"] not in ("success", "failed", "canceled", "skipped"):
                    pipeline["status"] = "canceled"
                return self._send(201, _public(pipeline))

            def _body(self) -> dict:
                """A JSON body, or a form whose `variables[K]` and `inputs[K]` keys become hashes."""
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                if self.headers.get("Content-Type", "").startswith("application/json"):
                    return json.loads(raw)
                body: dict = {}
                for key, [value] in parse_qs(raw).items():
                    if m := re.fullmatch(r"(variables|inputs)\[(\w+)\]", key):
                        body.setdefault(m[1], {})[m[2]] = value
                    else:
                        body[key] = value
                return body

            def _trigger(self):
                form = self._body()
                if form.get("token") != fake.trigger_token:
                    return self._send(404, {"message": "404 Not Found"})  # GitLab hides bad trigger tokens
                if "ref" not in form:
                    return self._send(400, {"error": "ref is missing"})
                variables, inputs = form.get("variables") or {}, form.get("inputs") or {}
                if variables and not fake.pipeline_variables:
                    return self._send(400, {"message": {"base": ["Insufficient permissions to set pipeline variables"]}})
                try:
                    ci_config(inputs)
                except InputError as error:
                    return self._send(400, {"message": {"base": [str(error)]}})
                pipeline_id = next(fake._ids)
                pipeline = {"id": pipeline_id, "job_id": pipeline_id + 1, "status": "pending", "ref": form["ref"],
                            "web_url": f"{fake.url}/{fake.project}/-/pipelines/{pipeline_id}", "variables": variables,
                            "inputs": inputs, "jobs": {}}
                fake.pipelines[pipeline_id] = pipeline
                threading.Thread(target=fake._run, args=(pipeline, variables), daemon=True).start()
                return self._send(201, _public(pipeline))

            def do_GET(self):
                self._route("GET")

            def do_POST(self):
                self._route("POST")

        return Handler


def _public(pipeline: dict) -> dict:
    return {k: v for k, v in pipeline.items() if k not in ("job_id", "variables", "inputs", "jobs")}
