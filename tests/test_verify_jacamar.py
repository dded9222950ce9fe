"""The jacamar backend against a fake GitLab that speaks API v4 and runs the shipped CI job."""

import json
import socket
import threading
from pathlib import Path

import pytest

from fake_gitlab import FakeGitLab, job_script, sbatch_runner
from maple_ci.errors import MapleError
from maple_ci.verify.jacamar import scheduler_parameters, verify_jacamar

SCRIPT = """#!/bin/bash
#SBATCH -A m1234_g -C gpu -q regular
#SBATCH --nodes=2 --gpus-per-node=4
#SBATCH --time=00:10:00
#SBATCH --job-name="ddp run"
module load pytorch/2.8.0
#SBATCH --ignored-after-first-command
srun torchrun --nnodes 2 --nproc_per_node 4 train.py
"""

RESULT = {"ok": True, "miniapp": "ddp", "world_size": 8, "ranks_seen": list(range(8))}


def echo_runner(code: int, line: str):
    """A stand-in for the center: reports what the job printed, and records what it was asked."""
    seen = {}

    def run(script: str, variables: dict):
        seen.update(script=script, variables=variables)
        return code, f"Running on n1\n{line}\n"

    return run, seen


@pytest.fixture
def script_path():
    return "scripts/perlmutter/train.sbatch"  # in the repository at the commit; the center reads it there


def run(fake: FakeGitLab, path, script=SCRIPT, **overrides):
    options = dict(cluster="perlmutter", miniapp="ddp", gitlab_url=fake.url, project=fake.project,
                   trigger_token=fake.trigger_token, api_token=fake.api_token, poll_interval=0.05, timeout=30)
    return verify_jacamar(path, script=script, **(options | overrides))


def test_scheduler_parameters_are_the_directives_before_the_first_command():
    assert scheduler_parameters(SCRIPT) == (
        "-A m1234_g -C gpu -q regular --nodes=2 --gpus-per-node=4 --time=00:10:00 '--job-name=ddp run'"
    )


def test_shipped_ci_job_runs_maple_verify_on_the_triggered_script():
    script = job_script()
    assert 'maple_ci verify "$MAPLE_SCRIPT"' in script
    assert '--miniapp "$MAPLE_MINIAPP"' in script


def test_passing_pipeline_maps_to_ok_with_the_miniapp_result(script_path):
    runner, seen = echo_runner(0, "MAPLE_MINIAPP_RESULT " + json.dumps(RESULT))
    with FakeGitLab(runner) as fake:
        result = run(fake, script_path, commit="abc123", ref="maple/port-1")
    assert result.ok and result.state == "success"
    assert result.result["world_size"] == 8
    assert result.log_url.endswith(f"/-/pipelines/{result.job_id}")
    variables = seen["variables"]
    assert variables["MAPLE_CLUSTER"] == "perlmutter" and variables["MAPLE_COMMIT"] == "abc123"
    assert variables["SCHEDULER_PARAMETERS"].startswith("-A m1234_g -C gpu")
    assert fake.pipelines[int(result.job_id)]["ref"] == "maple/port-1"


def test_failed_job_is_not_ok_and_keeps_the_trace(script_path):
    runner, _ = echo_runner(1, "srun: error: Unable to allocate resources: Invalid qos specification")
    with FakeGitLab(runner) as fake:
        result = run(fake, script_path)
    assert not result.ok and result.state == "failed"
    assert "Invalid qos specification" in result.log


def test_success_without_a_result_line_is_not_ok(script_path):
    runner, _ = echo_runner(0, "training skipped")
    with FakeGitLab(runner) as fake:
        result = run(fake, script_path)
    assert not result.ok and "did not report success" in result.message


def test_stuck_pipeline_times_out_with_a_clear_status(script_path):
    release = threading.Event()

    def stuck(script, variables):
        release.wait(10)
        return 0, ""

    with FakeGitLab(stuck) as fake:
        result = run(fake, script_path, timeout=0.3)
        release.set()
    assert not result.ok and result.state == "timeout"
    assert "still" in result.message and result.log_url in result.message
    # The pipeline does not go on holding an allocation at the center for nobody.
    assert "cancelled" in result.message and fake.pipelines[int(result.job_id)]["status"] == "canceled"
    assert ("POST", f"/api/v4/projects/hpc%2Fmaple-verify/pipelines/{result.job_id}/cancel") in fake.requests


def test_a_read_only_token_cannot_cancel_and_the_timeout_says_so(script_path):
    release = threading.Event()

    def stuck(script, variables):
        release.wait(10)
        return 0, ""

    with FakeGitLab(stuck, api_scopes=("read_api",)) as fake:
        result = run(fake, script_path, timeout=0.3)
        release.set()
    assert result.state == "timeout" and "could not be cancelled" in result.message and "insufficient_scope" in result.message


def test_server_errors_are_retried(script_path):
    runner, _ = echo_runner(0, "MAPLE_MINIAPP_RESULT " + json.dumps(RESULT))
    with FakeGitLab(runner, fail_first=2) as fake:
        result = run(fake, script_path, sleep=lambda s: None)
    assert result.ok
    assert [m for m, _ in fake.requests[:3]] == ["POST", "POST", "POST"]


def test_wrong_trigger_token_is_a_clear_error(script_path):
    runner, _ = echo_runner(0, "")
    with FakeGitLab(runner) as fake:
        with pytest.raises(MapleError, match="GitLab answered 404"):
            run(fake, script_path, trigger_token="wrong")
        assert fake.pipelines == {}


def test_unreachable_gitlab_is_a_clear_error_without_hanging(script_path):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(MapleError, match="unreachable"):
        verify_jacamar(script_path, script=SCRIPT, cluster="perlmutter", miniapp="ddp", gitlab_url=f"http://127.0.0.1:{port}",
                       project="p", trigger_token="t", sleep=lambda s: None)


def test_missing_settings_are_named(script_path):
    with pytest.raises(MapleError, match="MAPLE_GITLAB_URL"):
        verify_jacamar(script_path, script=SCRIPT, cluster="perlmutter", miniapp="ddp", gitlab_url="", project="",
                       trigger_token="")


@pytest.mark.cluster
def test_end_to_end_a_generated_delta_script_trains_in_a_batch_job_of_the_center(
        slurm_cluster, port, tmp_path, master_port):
    # The center's checkout holds the generated script where the bot commits it; the fake GitLab
    # runs the shipped CI job in a Slurm batch job, where `maple verify --in-allocation` runs it.
    checkout, script, text = tmp_path / "checkout", Path("scripts/delta/train.sbatch"), port("delta", master_port=master_port)
    (checkout / script.parent).mkdir(parents=True)
    (checkout / script).write_text(text)
    with FakeGitLab(sbatch_runner(checkout, slurm_cluster.job_env)) as fake:
        result = run(fake, script.as_posix(), text, cluster="delta", timeout=900, poll_interval=1)
    assert result.ok and result.state == "success", result.message + "\n" + result.log
    assert result.result["miniapp"] == "ddp" and result.result["world_size"] == 8
    assert result.result["ranks_seen"] == list(range(8)) and result.result["hostnames"] == ["n1", "n2"]
    variables = fake.pipelines[int(result.job_id)]["variables"]
    assert variables["MAPLE_SCRIPT"] == "scripts/delta/train.sbatch"
    assert "--partition=gpuA100x4" in variables["SCHEDULER_PARAMETERS"]  # what a real Delta runner would get
