"""Verification through the bot, against the fake GitHub and the fake GitLab with the real jacamar
backend (issue 10, findings 7 and 10): what the center is sent is the committed port, a request cut
short is verified when asked again, every run of a request waits at once, check runs say what is
running, and nothing is left running at the center when a run times out or the bot is stopped."""

import json
import os
import signal
import threading
import time
from contextlib import nullcontext
from pathlib import Path

import pytest
from fake_gitlab import FakeGitLab
from scenarios import KNOWN, comment_plan

from maple_ci.errors import MapleError
from maple_ci.github.bot import run_plan
from maple_ci.github.commands import BotCommand
from maple_ci.github.config import Config
from maple_ci.github.events import plan_event
from maple_ci.github.pipeline import Pipeline, run_backend
from maple_ci.verify import jacamar

EXAMPLE = Path(__file__).parents[2] / "examples" / "perlmutter_torchrun_ddp.sbatch"
PASSED = 'MAPLE_MINIAPP_RESULT {"ok": true, "miniapp": "ddp", "world_size": 8}\n'
PORTED = "scripts/perlmutter/train.sbatch"
COMMIT = "c" * 40  # the commit `verify` is told holds the scripts
POLARIS = ("#!/bin/bash\n#PBS -l select=2:system=polaris\n#PBS -l walltime=00:30:00\n#PBS -q debug\n#PBS -A MyProject\n"
           "cd $PBS_O_WORKDIR\nmpiexec -n 8 --ppn 4 python train.py\n")


class Center:
    """The runner behind the fake GitLab: the check job passes; the verify job records what it was
    sent and when, waits `hold` seconds (or until released), then reports the mini-app's success."""

    def __init__(self, hold: float = 0.0, on_start=lambda variables: None):
        self.hold, self.on_start = hold, on_start
        self.jobs: list[dict] = []
        self.release = threading.Event()

    def __call__(self, script: str, variables: dict) -> tuple[int, str]:
        if variables.get("CI_JOB_NAME") != "maple-verify":
            return 0, ""
        job = {"variables": variables, "start": time.monotonic()}
        self.jobs.append(job)
        self.on_start(variables)
        self.release.wait(self.hold)
        job["end"] = time.monotonic()
        return 0, PASSED


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch):
    monkeypatch.setattr(jacamar, "POLL_SECONDS", 0.05)


def settings(gitlab: FakeGitLab, **more) -> dict:
    return {"MAPLE_GITLAB_URL": gitlab.url, "MAPLE_GITLAB_PROJECT": gitlab.project,
            "MAPLE_GITLAB_TRIGGER_TOKEN": gitlab.trigger_token, "MAPLE_GITLAB_TOKEN": gitlab.api_token, **more}


def jacamar_pipeline(root: Path, env: dict, backend=run_backend) -> Pipeline:
    return Pipeline(Config(targets=["perlmutter"], verification={"default": "jacamar"}), lambda ref: nullcontext(root),
                    env=env, backend=backend)


@pytest.fixture
def port_request(fake, webhook, tmp_path, monkeypatch):
    """PR #1 adds jobs/train.sbatch; `/maple port perlmutter` on it. The runner's working directory
    is the default branch, which holds an older port of the same name (other directives)."""
    main = fake.refs["heads/main"]
    fake.refs["heads/feature"] = fake.commit_files({"jobs/train.sbatch": EXAMPLE.read_text()}, [main], "add train.sbatch")
    fake.permissions["Codertocat"] = "write"
    number = fake.open_pull("feature", "main")["number"]
    checkout = tmp_path / "checkout"
    (checkout / "jobs").mkdir(parents=True)
    (checkout / "jobs" / "train.sbatch").write_text(EXAMPLE.read_text())
    workspace = tmp_path / "workspace"
    (workspace / PORTED).parent.mkdir(parents=True)
    (workspace / PORTED).write_text("#!/bin/bash\n#SBATCH -A stale_account -N 9\nsrun python train.py\n")
    monkeypatch.chdir(workspace)
    plan, _ = comment_plan(webhook, number, "/maple port perlmutter")
    return plan, checkout


def pending(path: str) -> dict:
    """A ported script at `path` (scripts/<cluster>/...) as `port` hands it to `verify`."""
    return {"source": path, "intent": {}, "clusters": [
        {"cluster": path.split("/")[1], "path": path, "content": EXAMPLE.read_text(), "template": "", "checks": [],
         "verification": "pending", "log_url": None, "suggestions": []}]}


def verification_runs(fake, name="maple / perlmutter / jobs/train.sbatch"):
    """The check runs on the bot's commit (the same verdicts also go to the contributor's PR head)."""
    bot = fake.refs.get("heads/maple/port-pr-1")
    return [(run["status"], run.get("conclusion")) for run in fake.check_runs if run["name"] == name and run["head_sha"] == bot]


def test_a_new_port_is_verified_with_the_directives_it_commits(fake, repo, port_request):
    plan, checkout = port_request
    with FakeGitLab(center := Center()) as gitlab:
        done = run_plan(repo, plan, jacamar_pipeline(checkout, settings(gitlab)).port,
                        jacamar_pipeline(checkout, settings(gitlab)).verify)
    head = fake.refs["heads/maple/port-pr-1"]
    assert len(center.jobs) == 1
    # Nothing read here: the center checks out that commit and derives the scheduler options from
    # the file there, not from the working directory's stale port (tests/test_verify_jacamar.py).
    [triggered] = gitlab.pipelines.values()
    sent = triggered["inputs"]  # typed inputs, no variables (the center's spec:inputs)
    assert (sent["script"], sent["commit"]) == (PORTED, head) and set(sent) == {"cluster", "script", "miniapp", "commit"}
    assert triggered["variables"] == {}
    assert [c["verification"] for r in done.results for c in r["clusters"]] == ["passed"]
    assert verification_runs(fake) == [("completed", "success")]


def test_a_request_cut_short_is_verified_when_asked_again(fake, repo, port_request):
    plan, checkout = port_request

    def runner_lost(*args, **kwargs):
        raise RuntimeError("the runner lost its connection")

    with FakeGitLab(center := Center()) as gitlab:
        with pytest.raises(Exception):
            run_plan(repo, plan, jacamar_pipeline(checkout, {}).port, jacamar_pipeline(checkout, {}, runner_lost).verify)
        assert "heads/maple/port-pr-1" in fake.refs and len(fake.pulls) == 2  # the branch and the PR exist
        assert verification_runs(fake) == [("completed", "cancelled")]  # not left "in progress"

        pipeline = jacamar_pipeline(checkout, settings(gitlab))
        run_plan(repo, plan, pipeline.port, pipeline.verify)  # the same files: verified now, not "(unchanged)"
        assert len(center.jobs) == 1 and not fake.comments[-1]["body"].endswith("(unchanged)")
        assert verification_runs(fake)[-1] == ("completed", "success")

        run_plan(repo, plan, pipeline.port, pipeline.verify)  # verified: nothing runs again
        assert len(center.jobs) == 1 and fake.comments[-1]["body"].endswith("(unchanged)")


def test_a_nightly_verifies_every_cluster_at_once_with_check_runs_in_progress_meanwhile(fake, repo, tmp_path):
    checkout = tmp_path / "main"
    for cluster, name, text in (("perlmutter", "train.sbatch", EXAMPLE.read_text()), ("polaris", "train.pbs", POLARIS)):
        (checkout / "scripts" / cluster).mkdir(parents=True)
        (checkout / "scripts" / cluster / name).write_text(text)
    seen = []  # the check runs on GitHub when each job starts at the center
    center = Center(hold=1.5, on_start=lambda variables: seen.append({r["name"]: r["status"] for r in fake.check_runs}))
    plan = plan_event("schedule", {"repository": {"default_branch": "main"}}, KNOWN, targets=("perlmutter", "polaris"))
    took = []
    with FakeGitLab(center) as gitlab:
        pipeline = Pipeline(Config(targets=["perlmutter", "polaris"], verification={"default": "jacamar"}),
                            lambda ref: nullcontext(checkout), env=settings(gitlab))

        def verify(*args):
            started = time.monotonic()
            verified = pipeline.verify(*args)
            took.append(time.monotonic() - started)
            return verified

        done = run_plan(repo, plan, pipeline.port, verify)
    first, second = sorted(center.jobs, key=lambda job: job["start"])
    assert second["start"] < first["end"]  # both held an allocation at once
    assert took[0] < 2 * center.hold  # about the time of one run, not of two
    names = ["maple / perlmutter / scripts/perlmutter/train.sbatch", "maple / polaris / scripts/polaris/train.pbs"]
    assert seen[0] == dict.fromkeys(names, "in_progress")  # on the PR while the center's queue holds the jobs
    assert {r["name"]: r["status"] for r in fake.check_runs} == dict.fromkeys(names, "completed")
    assert [c["verification"] for r in done.results for c in r["clusters"]] == ["passed", "passed"]


def test_stopping_the_bot_cancels_every_pipeline_in_flight(tmp_path):
    results = [pending(f"scripts/{cluster}/train.sh") for cluster in ("perlmutter", "polaris")]
    center = Center(hold=30)

    def stop_when_both_started(variables):
        if len(center.jobs) == 2:
            os.kill(os.getpid(), signal.SIGTERM)  # what the runner sends when the workflow is cancelled

    center.on_start = stop_when_both_started
    with FakeGitLab(center) as gitlab:
        pipeline = jacamar_pipeline(tmp_path, settings(gitlab))
        started = time.monotonic()
        with pytest.raises(MapleError, match="SIGTERM"):
            pipeline.verify(BotCommand("verify"), results, COMMIT)
        elapsed = time.monotonic() - started
        center.release.set()
    assert [p["status"] for p in gitlab.pipelines.values()] == ["canceled", "canceled"]
    assert elapsed < 10  # not the 30 s the jobs would have held
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is gone with the verification


def test_the_verify_timeout_input_limits_each_run_and_cancels_the_pipeline(tmp_path):
    results = [pending(PORTED)]
    center = Center(hold=30)
    with FakeGitLab(center) as gitlab:
        pipeline = jacamar_pipeline(tmp_path, settings(gitlab, MAPLE_VERIFY_TIMEOUT="1"))
        [c] = pipeline.verify(BotCommand("verify"), results, COMMIT)[0]["clusters"]
        center.release.set()
    assert c["verification"] == "failed" and "after 1 s, cancelled" in c["note"]
    assert [p["status"] for p in gitlab.pipelines.values()] == ["canceled"]


def test_a_verify_timeout_that_is_not_a_number_is_a_clear_error(tmp_path):
    results = [pending(PORTED)]
    [c] = jacamar_pipeline(tmp_path, {"MAPLE_VERIFY_TIMEOUT": "1h"}).verify(BotCommand("verify"), results, COMMIT)[0]["clusters"]
    assert c["verification"] == "error" and "must be a whole number of seconds, not '1h'" in c["note"]


NCCL_LOGS = Path(__file__).parents[1] / "data" / "nccl_logs"


class GpuCenter(Center):
    """The center's runner (behind the fake GitLab) reporting a GPU job: a cited NCCL log excerpt
    and, standing in for the mini-app's line on a GPU node, a result line in its own form."""

    def __init__(self, log: str):
        super().__init__()
        line = {"ok": True, "miniapp": "ddp", "world_size": 8, "ranks_seen": list(range(8)), "hostnames": ["nid1", "nid2"],
                "backend": "nccl", "step_time_s": 0.05,
                "allreduce": [{"bytes": 1 << 28, "time_us": 3500.0, "algbw_gbps": 44.0, "busbw_gbps": 77.0}]}
        self.trace = (NCCL_LOGS / log).read_text() + "MAPLE_MINIAPP_RESULT " + json.dumps(line) + "\n"

    def __call__(self, script: str, variables: dict) -> tuple[int, str]:
        status, _ = super().__call__(script, variables)
        return status, self.trace if variables.get("CI_JOB_NAME") == "maple-verify" else ""


@pytest.mark.parametrize("log, conclusion", [("ofi_slingshot.log", "success"), ("socket.log", "failure")])
def test_the_check_run_shows_the_speed_and_fails_a_socket_fallback(fake, repo, port_request, log, conclusion):
    plan, checkout = port_request
    with FakeGitLab(GpuCenter(log)) as gitlab:
        pipeline = jacamar_pipeline(checkout, settings(gitlab))
        run_plan(repo, plan, pipeline.port, pipeline.verify)
    assert verification_runs(fake)[-1] == ("completed", conclusion)
    bot = fake.refs["heads/maple/port-pr-1"]
    [run] = [r for r in fake.check_runs if r["name"] == "maple / perlmutter / jobs/train.sbatch" and r["head_sha"] == bot]
    summary = run["output"]["summary"]
    assert "### Speed" in summary and "busbw 77.0 GB/s" in summary and "| step time | 0.05 s |" in summary
    assert ("runs, but over TCP sockets" in summary) == (conclusion == "failure")
