"""The center-side GitLab job refuses every request the bot could not have sent, before anything runs.

Each attack is a pipeline of the fake GitLab whose jobs run the shipped CI file with a shell
executor in a clone of a mirror; the committed script (and a file BASH_ENV points at) would touch a
marker file if any shell started by the job ran them.
"""

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests

from fake_gitlab import REPO, FakeGitLab, center_repo, git, job_script, shell_runner

sys.path.insert(0, str(REPO / "workflows" / "gitlab"))
from maple_center_check import scheduler_parameters  # noqa: E402

SCRIPT = """#!/bin/bash
#SBATCH -A m1234_g -C gpu -q regular --reservation=big
#SBATCH --nodes=64 --gpus-per-node=4
#SBATCH --time=12:00:00 --output=/home/other/owned.log
#SBATCH --job-name=ddp
touch "{marker}"
srun torchrun --nnodes 64 --nproc_per_node 4 train.py
"""
SITE = {"MAPLE_CLUSTERS": "perlmutter", "MAPLE_MAX_NODES": "2", "MAPLE_MAX_MINUTES": "30",
        "MAPLE_SITE_SCHEDULER_OPTIONS": "--account=center_acct --qos=debug"}


@pytest.fixture
def center(tmp_path):
    """A mirror (bare) whose main holds a ported script and an `evil.sh`, the runner's clone of it,
    and the center's maple-ci venv (fake_gitlab.center_repo)."""
    work, marker = tmp_path / "work", tmp_path / "marker"
    (work / "scripts" / "perlmutter").mkdir(parents=True)
    (work / "scripts" / "perlmutter" / "train.sbatch").write_text(SCRIPT.format(marker=marker))
    (work / "evil.sh").write_text(f'touch "{marker}"\n')
    (work / "scripts" / "perlmutter" / "link.sbatch").symlink_to("train.sbatch")
    repo = center_repo(tmp_path, work)
    request = {"MAPLE_CLUSTER": "perlmutter", "MAPLE_SCRIPT": "scripts/perlmutter/train.sbatch",
               "MAPLE_MINIAPP": "ddp", "MAPLE_COMMIT": repo["commit"]}
    return {**repo, "marker": marker, "request": request, "site": {**repo["site"], **SITE}}


def pipeline(center, **changes) -> tuple[dict, str]:
    """Trigger the shipped pipeline as a trigger token's holder could, and wait for it."""
    variables = {k: v for k, v in {**center["request"], **changes}.items() if v is not None}
    runner = shell_runner(center["checkout"])
    with FakeGitLab(runner, checkout=center["checkout"], site_variables=center["site"]) as fake:
        form = {"token": fake.trigger_token, "ref": "main", **{f"variables[{k}]": v for k, v in variables.items()}}
        pipeline_id = requests.post(f"{fake.url}/api/v4/projects/{fake.project.replace('/', '%2F')}/trigger/pipeline",
                                    data=form, timeout=10).json()["id"]
        while fake.pipelines[pipeline_id]["status"] in ("pending", "running"):
            time.sleep(0.05)
        record = fake.pipelines[pipeline_id]
        return record, fake.traces[record["job_id"]]


def check_job(center, **changes) -> tuple[int, str]:
    """Only the first job, with a request that passes it (the second would run the mini-app)."""
    env = {**center["site"], **center["request"], "CI_DEFAULT_BRANCH": "main", **changes}
    return shell_runner(center["checkout"])(job_script("maple-check"), env)


def refused(center, reason: str, **changes) -> None:
    record, trace = pipeline(center, **changes)
    assert record["status"] == "failed" and "maple-center-check: refused" in trace and reason in trace, trace
    assert not center["marker"].exists()  # nothing from the request ran


def test_a_valid_request_passes_the_check_with_center_derived_scheduler_options(center):
    code, trace = check_job(center)
    assert code == 0, trace
    assert (center["checkout"] / "maple-request.env").read_text() == (
        "SCHEDULER_PARAMETERS=--nodes=2 --time=00:30:00 --constraint=gpu --gpus-per-node=4 --job-name=ddp "
        "--account=center_acct --qos=debug\n")  # 64 nodes and 12 h capped; the script's account, QOS, output dropped
    assert "left to the site: -A -q --reservation --output" in trace
    assert git(center["checkout"], "rev-parse", "HEAD") == center["request"]["MAPLE_COMMIT"]
    assert not center["marker"].exists()


def test_a_commit_that_is_not_a_full_id_is_refused(center):
    refused(center, "is not a full commit id", MAPLE_COMMIT="main")


def test_a_commit_on_no_trusted_branch_is_refused(center):
    work = center["work"]
    git(work, "checkout", "--quiet", "-b", "feature")
    (work / "scripts" / "perlmutter" / "train.sbatch").write_text("#!/bin/bash\necho other\n")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-am", "unreviewed")
    commit = git(work, "rev-parse", "HEAD")
    git(work, "push", "--quiet", str(center["mirror"]), "feature")  # on the mirror, neither protected nor maple/port-*
    git(center["checkout"], "fetch", "--quiet", "origin", "feature")  # as the runner does for a pipeline on `feature`
    refused(center, "is on no protected branch", MAPLE_COMMIT=commit)
    git(work, "push", "--quiet", str(center["mirror"]), "feature:maple/port-7")  # the bot's branches are trusted
    code, trace = check_job(center, MAPLE_COMMIT=commit, MAPLE_SCRIPT="scripts/perlmutter/train.sbatch")
    assert code == 0 and "SCHEDULER_PARAMETERS=--nodes=1 --time=00:30:00" in trace, trace


def test_an_unknown_commit_is_refused_after_the_wait(center):
    refused(center, "is not in the mirror", MAPLE_COMMIT="0" * 40)


@pytest.mark.parametrize("script", ["scripts/perlmutter/../perlmutter/train.sbatch", "/etc/passwd",
                                    "scripts/aurora/train.sbatch", "evil.sh", "scripts/perlmutter/.hidden"])
def test_a_script_outside_scripts_of_the_cluster_is_refused(center, script):
    refused(center, "is not scripts/perlmutter/<file name>", MAPLE_SCRIPT=script)


def test_a_symlinked_script_is_refused(center):
    refused(center, "is not a regular file in commit", MAPLE_SCRIPT="scripts/perlmutter/link.sbatch")


def test_a_symlink_in_the_checkout_is_refused_even_if_git_has_a_file(center):
    from maple_center_check import Refused, read_script

    checkout, commit = center["checkout"], center["request"]["MAPLE_COMMIT"]
    (checkout / "scripts" / "perlmutter").rename(checkout / "real")
    (checkout / "scripts" / "perlmutter").symlink_to(checkout / "real")
    with pytest.raises(Refused, match="scripts/perlmutter is a symlink"):
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(checkout)
            patch.setattr("maple_center_check.git", lambda *args, check=True: subprocess.CompletedProcess(
                args, 0, "100644 blob x\tscripts/perlmutter/train.sbatch" if args[0] == "ls-tree" else "", ""))
            read_script(commit, "scripts/perlmutter/train.sbatch")


@pytest.mark.parametrize("changes, reason", [
    ({"MAPLE_CLUSTER": "frontier", "MAPLE_SCRIPT": "scripts/frontier/train.sbatch"}, "not one of this center's clusters"),
    ({"MAPLE_MINIAPP": "../../evil"}, "MAPLE_MINIAPP '../../evil' is not one of"),
    ({"SCHEDULER_PARAMETERS": "--nodes=512 --account=someone_else"}, "the center derives them"),
])
def test_values_outside_the_allowlists_are_refused(center, changes, reason):
    refused(center, reason, **changes)


@pytest.mark.parametrize("name", ["BASH_ENV", "ENV", "LD_PRELOAD", "PROMPT_COMMAND", "GIT_SSH_COMMAND"])
def test_variables_that_change_how_programs_start_are_refused(center, name):
    value = f"{center['checkout']}/evil.sh"
    record, trace = pipeline(center, **{name: value})
    assert record["status"] == "failed" and f"{name} is set" in trace
    assert not center["marker"].exists()


def test_a_bash_env_of_the_site_itself_passes_and_one_a_request_could_write_does_not(center):
    # Lmod gives batch shells `module` through BASH_ENV, so a center's jobs may well start with one:
    # a file only root can change (the test cluster's, as root installs it) is the site's own.
    site_dir = Path(tempfile.mkdtemp(dir=Path.home()))  # root-only all the way up, wherever the checkout is
    try:
        site_file = site_dir / "site-env.sh"
        site_file.write_text((REPO / "tests" / "cluster" / "site-env.sh").read_text())
        code, trace = check_job(center, BASH_ENV=str(site_file))
    finally:
        shutil.rmtree(site_dir)
    assert code == 0, trace
    writable = center["checkout"] / "site-env.sh"  # same content, in the checkout (under /tmp here)
    writable.write_text((REPO / "tests" / "cluster" / "site-env.sh").read_text())
    for value in (str(writable), f"$(touch {center['marker']})", "tests/cluster/site-env.sh"):
        code, trace = check_job(center, BASH_ENV=value)
        assert code == 1 and "BASH_ENV is set" in trace, value
    assert not center["marker"].exists()


def test_the_check_fails_clearly_without_the_centers_maple_ci(center):
    center["site"].pop("MAPLE_CI_VENV")
    record, trace = pipeline(center)
    assert record["status"] == "failed" and "MAPLE_CI_VENV does not name the center's maple-ci venv" in trace
    assert not center["marker"].exists()
    jobs = job_script("maple-check") + job_script("maple-verify")
    assert "install" not in jobs and " -m pip" not in jobs  # nothing installed at job time


def test_the_batch_job_must_run_with_the_derived_options(center, monkeypatch, capsys):
    from maple_center_check import main

    monkeypatch.chdir(center["checkout"])
    for name, value in {**center["site"], **center["request"], "CI_DEFAULT_BRANCH": "main",
                        "SCHEDULER_PARAMETERS": "--nodes=64 --time=12:00:00"}.items():
        monkeypatch.setenv(name, value)
    assert main([]) == 1 and "the job was submitted with '--nodes=64" in capsys.readouterr().err


def test_pbs_directives_are_capped_and_the_site_sets_queue_and_account():
    script = ("#!/bin/bash\n#PBS -A proj -q prod -l select=10:ncpus=64:ngpus=4\n#PBS -l walltime=06:00:00"
              " -l filesystems=home:eagle -l place=scatter -o /tmp/x\nmpiexec python train.py\n")
    parameters, dropped = scheduler_parameters(script, max_nodes=2, max_minutes=20, site_options="-A center -q debug")
    assert parameters == ("-l select=2:ncpus=64:ngpus=4 -l walltime=00:20:00 -l filesystems=home:eagle "
                          "-l place=scatter -A center -q debug")
    assert dropped == ["-A", "-q", "-o"]


def test_options_with_unsafe_values_are_dropped_not_passed():
    parameters, dropped = scheduler_parameters("#SBATCH --partition='gpu debug' --gres=gpu:4\n#SBATCH -t 10\n",
                                               max_nodes=4, max_minutes=60, site_options="")
    assert parameters == "--nodes=1 --time=00:10:00 --gres=gpu:4" and dropped == ["--partition"]
