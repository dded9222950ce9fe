"""The jacamar backend against a fake GitLab that speaks API v4 and runs the shipped CI jobs: the
center's check for real (in a clone of a mirror, as workflows/gitlab/README.md sets it up), the
batch job through a stand-in or, on the test cluster, in a Slurm job."""

import base64
import json
import socket
import threading

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from fake_gitlab import FakeGitLab, center_repo, git, job_script, sbatch_runner, shell_runner, write_settings
from maple_ci.attestation import public_key
from maple_ci.errors import MapleError
from maple_ci.verify.jacamar import verify_jacamar

SCRIPT = """#!/bin/bash
#SBATCH -A m1234_g -C gpu -q regular
#SBATCH --nodes=2 --gpus-per-node=4
#SBATCH --time=00:10:00
#SBATCH --job-name="ddp run"
module load pytorch/2.8.0
#SBATCH --ignored-after-first-command
srun torchrun --nnodes 2 --nproc_per_node 4 train.py
"""
PATH = "scripts/perlmutter/train.sbatch"
COMMIT = "0123456789abcdef0123456789abcdef01234567"  # for runners that stand in for the whole center
RESULT = {"ok": True, "miniapp": "ddp", "world_size": 8, "ranks_seen": list(range(8))}
PASSED = "MAPLE_MINIAPP_RESULT " + json.dumps(RESULT)
SENT = {"cluster", "script", "miniapp", "commit"}  # the center's typed inputs, all it accepts


def echo_runner(code: int, line: str):
    """A stand-in for the center: reports what the job printed, and records what it was asked."""
    seen = {}

    def run(script: str, variables: dict):
        seen.update(script=script, variables=variables)
        return code, f"Running on n1\n{line}\n"

    return run, seen


@pytest.fixture
def center(tmp_path):
    """The center's project: main holds SCRIPT at PATH; its runner's checkout, venv and variables."""
    work = tmp_path / "work"
    (work / PATH).parent.mkdir(parents=True)
    (work / PATH).write_text(SCRIPT)
    return center_repo(tmp_path, work)


def checked_runner(center, code: int = 0, line: str = PASSED):
    """The center's check job runs for real in its checkout (a shell executor on a login node); the
    batch job is a stand-in that prints `line` and exits `code`."""
    login, (batch, _) = shell_runner(center["checkout"]), echo_runner(code, line)
    return lambda script, variables: (batch if variables["CI_JOB_NAME"] == "maple-verify" else login)(script, variables)


def run(fake: FakeGitLab, path=PATH, **overrides):
    options = dict(cluster="perlmutter", miniapp="ddp", gitlab_url=fake.url, project=fake.project, commit=COMMIT,
                   trigger_token=fake.trigger_token, api_token=fake.api_token, poll_interval=0.05, timeout=30)
    return verify_jacamar(path, **(options | overrides))


def test_shipped_ci_job_runs_the_installed_gate_on_the_triggered_inputs():
    script = job_script(inputs={"cluster": "delta", "script": PATH.replace("perlmutter", "delta"), "miniapp": "fsdp",
                                "commit": COMMIT})
    assert ("/opt/maple-ci/venv/bin/python -I -m maple_ci.center verify --settings /etc/maple-ci/center.toml "
            "--cluster 'delta' --script 'scripts/delta/train.sbatch' --miniapp 'fsdp' "
            f"--commit '{COMMIT}' --attestation ''") in script


def test_the_center_derives_the_scheduler_options_from_the_committed_script(center):
    with FakeGitLab(checked_runner(center), checkout=center["checkout"], site_variables=center["site"],
                    center_paths=center["paths"]) as fake:
        result = run(fake, commit=center["commit"], ref="maple/port-1")
    assert result.ok and result.state == "success", result.log
    assert result.result["world_size"] == 8
    assert result.log_url.endswith(f"/-/pipelines/{result.job_id}")
    pipeline = fake.pipelines[int(result.job_id)]
    assert pipeline["ref"] == "maple/port-1"
    assert pipeline["variables"] == {}  # a center lets no one set pipeline variables
    assert pipeline["inputs"] == {"cluster": "perlmutter", "script": PATH, "miniapp": "ddp", "commit": center["commit"]}
    # The batch job is submitted with what the check derived from the committed directives
    # (the account and QOS are the site's to set, a quoted job name is not passed on).
    assert pipeline["jobs"]["maple-verify"]["SCHEDULER_PARAMETERS"] == "--nodes=2 --time=00:10:00 --constraint=gpu --gpus-per-node=4"
    assert "left to the site: -A -q --job-name" in result.log


def test_the_center_verifies_the_committed_port_not_the_default_branchs_file(center):
    # The port is on the bot's branch; main (what the runner's checkout and working directory
    # hold) has an older script of the same name, with other directives. The bot signs the request
    # (its MAPLE_SIGNING_KEY), which is what lets the center take a commit of a maple/port-* branch.
    key = base64.b64encode(Ed25519PrivateKey.generate().private_bytes_raw()).decode()
    write_settings(center["settings"], {"clusters": ["perlmutter"], "fetch_wait_seconds": 0, "bot_keys": [public_key(key)]})
    work = center["work"]
    git(work, "checkout", "--quiet", "-b", "maple/port-pr-1")
    (work / PATH).write_text(SCRIPT.replace("--time=00:10:00", "--time=00:05:00"))
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-am", "port")
    git(work, "push", "--quiet", str(center["mirror"]), "maple/port-pr-1")
    with FakeGitLab(checked_runner(center), checkout=center["checkout"], site_variables=center["site"],
                    center_paths=center["paths"]) as fake:
        result = run(fake, commit=git(work, "rev-parse", "HEAD"), ref="main", signing_key=key)
    assert result.ok, result.log
    assert fake.pipelines[int(result.job_id)]["jobs"]["maple-verify"]["SCHEDULER_PARAMETERS"].startswith(
        "--nodes=2 --time=00:05:00")
    assert "--time=00:10:00" not in result.log


@pytest.mark.parametrize("commit", [None, "", "abc123", "HEAD", "maple/port-pr-1", COMMIT.upper(), COMMIT + "\n"])
def test_a_commit_that_is_not_a_full_id_is_a_clear_error_before_any_trigger(commit):
    runner, seen = echo_runner(0, PASSED)
    with FakeGitLab(runner) as fake:
        with pytest.raises(MapleError, match=r"full id \(40 hex digits\) of the commit that holds scripts/perlmutter/train.sbatch"):
            run(fake, commit=commit)
    assert fake.requests == [] and not seen


def test_a_trigger_the_center_refuses_fails_with_its_reason(center):
    # A commit no trusted branch holds: what a pipeline started from anything but the bot gets.
    with FakeGitLab(checked_runner(center), checkout=center["checkout"], site_variables=center["site"],
                    center_paths=center["paths"]) as fake:
        result = run(fake, commit="f" * 40)
    assert not result.ok and result.state == "failed"
    assert "maple-center-check: refused" in result.log and "is not in the mirror" in result.log
    assert "maple-verify" not in fake.pipelines[int(result.job_id)]["jobs"]  # nothing reached the batch job


def test_failed_job_is_not_ok_and_keeps_the_trace():
    runner, _ = echo_runner(1, "srun: error: Unable to allocate resources: Invalid qos specification")
    with FakeGitLab(runner) as fake:
        result = run(fake)
    assert not result.ok and result.state == "failed"
    assert "Invalid qos specification" in result.log


def test_success_without_a_result_line_is_not_ok():
    runner, _ = echo_runner(0, "training skipped")
    with FakeGitLab(runner) as fake:
        result = run(fake)
    assert not result.ok and "did not report success" in result.message


def test_stuck_pipeline_times_out_with_a_clear_status():
    release = threading.Event()

    def stuck(script, variables):
        release.wait(10)
        return 0, ""

    with FakeGitLab(stuck) as fake:
        result = run(fake, timeout=0.3)
        release.set()
    assert not result.ok and result.state == "timeout"
    assert "still" in result.message and result.log_url in result.message
    # The pipeline does not go on holding an allocation at the center for nobody.
    assert "cancelled" in result.message and fake.pipelines[int(result.job_id)]["status"] == "canceled"
    assert ("POST", f"/api/v4/projects/hpc%2Fmaple-verify/pipelines/{result.job_id}/cancel") in fake.requests


def test_a_read_only_token_cannot_cancel_and_the_timeout_says_so():
    release = threading.Event()

    def stuck(script, variables):
        release.wait(10)
        return 0, ""

    with FakeGitLab(stuck, api_scopes=("read_api",)) as fake:
        result = run(fake, timeout=0.3)
        release.set()
    assert result.state == "timeout" and "could not be cancelled" in result.message and "insufficient_scope" in result.message


def test_server_errors_are_retried():
    runner, _ = echo_runner(0, PASSED)
    with FakeGitLab(runner, fail_first=2) as fake:
        result = run(fake, sleep=lambda s: None)
    assert result.ok
    assert [m for m, _ in fake.requests[:3]] == ["POST", "POST", "POST"]


def test_wrong_trigger_token_is_a_clear_error():
    runner, _ = echo_runner(0, "")
    with FakeGitLab(runner) as fake:
        with pytest.raises(MapleError, match="GitLab answered 404"):
            run(fake, trigger_token="wrong")
        assert fake.pipelines == {}


def test_unreachable_gitlab_is_a_clear_error_without_hanging():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(MapleError, match="unreachable"):
        verify_jacamar(PATH, cluster="perlmutter", miniapp="ddp", gitlab_url=f"http://127.0.0.1:{port}",
                       project="p", trigger_token="t", commit=COMMIT, sleep=lambda s: None)


def test_missing_settings_are_named():
    with pytest.raises(MapleError, match="MAPLE_GITLAB_URL"):
        verify_jacamar(PATH, cluster="perlmutter", miniapp="ddp", gitlab_url="", project="",
                       trigger_token="", commit=COMMIT)


@pytest.mark.cluster
def test_end_to_end_a_generated_delta_script_trains_in_a_batch_job_of_the_center(
        slurm_cluster, port, tmp_path, master_port):
    # The bot commits the generated script; the center's mirror holds that commit, and the fake
    # GitLab runs the shipped jobs in a clone of it: the check on the "login node" (derives the
    # scheduler options), then the batch job in a Slurm job submitted with them, where the check
    # runs again and `maple verify --in-allocation` runs the script. Both start from the cluster's
    # job environment, whose BASH_ENV (Lmod's `module`) is the site's own file.
    work, script = tmp_path / "work", "scripts/delta/train.sbatch"
    (work / script).parent.mkdir(parents=True)
    (work / script).write_text(port("delta", master_port=master_port))
    # What the site's startup file (Lmod's init) sets in every batch shell, its exported `module` and
    # `ml` functions included (init/bash runs `export -f`): the site names them as its own.
    lmod = ("LMOD_CMD LMOD_DIR LMOD_PKG LMOD_ROOT LMOD_SETTARG_FULL_SUPPORT LMOD_VERSION MODULEPATH MODULESHOME"
            " BASH_FUNC_module%% BASH_FUNC_ml%%")
    center = center_repo(tmp_path, work, {"clusters": ["delta"], "site_variables": lmod.split()})
    with FakeGitLab(sbatch_runner(center["checkout"], slurm_cluster.job_env), checkout=center["checkout"],
                    center_paths=center["paths"]) as fake:
        result = run(fake, script, cluster="delta", commit=center["commit"], timeout=900, poll_interval=1)
    assert result.ok and result.state == "success", result.message + "\n" + result.log
    assert result.result["miniapp"] == "ddp" and result.result["world_size"] == 8
    assert result.result["ranks_seen"] == list(range(8)) and result.result["hostnames"] == ["n1", "n2"]
    pipeline = fake.pipelines[int(result.job_id)]
    assert set(pipeline["inputs"]) == SENT and pipeline["inputs"]["script"] == script and not pipeline["variables"]
    # What a real Delta runner would submit with, derived at the center from the committed script.
    assert "--partition=gpuA100x4" in pipeline["jobs"]["maple-verify"]["SCHEDULER_PARAMETERS"]
