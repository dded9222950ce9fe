"""The center-side GitLab jobs refuse every request the bot could not have sent, before anything runs.

Each attack is a pipeline of the fake GitLab (tests/fake_gitlab.py, the stand-in for a center's
GitLab: it checks `spec:inputs` and emulates the minimum role for pipeline variables) whose jobs run
the shipped CI file with a shell executor in a clone of a mirror; the committed script (and the files
a variable points at) would touch a marker file if anything the request chose ran. The gate itself
(`python -I -m maple_ci.center`) is also run directly, as a GitLab that checked nothing would.
"""

import shlex
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import requests

from fake_gitlab import REPO, FakeGitLab, center_repo, git, job_script, shell_runner
from maple_ci.center.options import scheduler_parameters
from maple_ci.schedulers.pbs import cap_select
from maple_ci.errors import MapleError
from maple_ci.paths import miniapps_dir
from maple_ci.verify.substitute import resolve_miniapp

SCRIPT = """#!/bin/bash
#SBATCH -A m1234_g -C gpu -q regular --reservation=big
#SBATCH --nodes=64 --gpus-per-node=4
#SBATCH --time=12:00:00 --output=/home/other/owned.log
#SBATCH --job-name=ddp
touch "{marker}"
srun torchrun --nnodes 64 --nproc_per_node 4 train.py
"""
# A port whose body the batch job really runs: Lmod's `module` (the test cluster's real Lmod, given
# by the site's root-only startup file), where it runs from, then the mini-app in place of train.py.
RUNS = """#!/bin/bash
#SBATCH -N 1 --time=00:05:00
# Note: the source ran the program in an apptainer container (x.sif); not used here
module list 2>&1 && echo module-ok
test -e .git && echo HAS-GIT || echo no-git-here
python train.py
"""
# A fork's image: a tag anyone may push again after approval, run by the batch job (issue 15).
IMAGE = """#!/bin/bash
#SBATCH -N 1 --time=00:05:00
touch "{marker}"
srun apptainer exec --nv docker://someone/pytorch:latest python train.py
"""
SITE = {"MAPLE_CLUSTERS": "perlmutter", "MAPLE_MAX_NODES": "2", "MAPLE_MAX_MINUTES": "30",
        "MAPLE_SITE_SCHEDULER_OPTIONS": "--account=center_acct --qos=debug"}
SITE_STARTUP = "/opt/maple-test/site-env.sh"  # root-only, installed by tests/cluster/setup.sh


@pytest.fixture
def center(tmp_path):
    """A mirror (bare) whose main holds a ported script and an `evil.sh`, the runner's clone of it,
    and the center's maple-ci venv (fake_gitlab.center_repo)."""
    work, marker = tmp_path / "work", tmp_path / "marker"
    (work / "scripts" / "perlmutter").mkdir(parents=True)
    (work / "scripts" / "perlmutter" / "train.sbatch").write_text(SCRIPT.format(marker=marker))
    (work / "scripts" / "perlmutter" / "runs.sbatch").write_text(RUNS)
    (work / "scripts" / "perlmutter" / "image.sbatch").write_text(IMAGE.format(marker=marker))
    (work / "evil.sh").write_text(f'#!/bin/sh\ntouch "{marker}"\n')
    (work / "evil.sh").chmod(0o755)
    (work / "scripts" / "perlmutter" / "link.sbatch").symlink_to("train.sbatch")
    repo = center_repo(tmp_path, work)
    inputs = {"cluster": "perlmutter", "script": "scripts/perlmutter/train.sbatch", "miniapp": "ddp",
              "commit": repo["commit"]}
    return {**repo, "marker": marker, "inputs": inputs, "site": {**repo["site"], **SITE}}


def trigger(center, variables: dict | None = None, allow_variables: bool = True, **inputs) -> tuple[dict, str]:
    """Trigger the shipped pipeline as a trigger token's holder could, and wait for it; a pipeline
    GitLab refused to create comes back as {"status": "refused", "message": ...}."""
    runner = shell_runner(center["checkout"])
    with FakeGitLab(runner, checkout=center["checkout"], site_variables=center["site"],
                    pipeline_variables=allow_variables) as fake:
        body = {"token": fake.trigger_token, "ref": "main", "inputs": {**center["inputs"], **inputs},
                "variables": variables or {}}
        answer = requests.post(f"{fake.url}/api/v4/projects/{fake.project.replace('/', '%2F')}/trigger/pipeline",
                               json=body, timeout=10)
        if answer.status_code != 201:
            return {"status": "refused", "message": answer.text}, ""
        pipeline_id = answer.json()["id"]
        while fake.pipelines[pipeline_id]["status"] in ("pending", "running"):
            time.sleep(0.05)
        record = fake.pipelines[pipeline_id]
        return record, fake.traces[record["job_id"]]


def gate(center, mode: str = "check", variables: dict | None = None, **inputs) -> tuple[int, str]:
    """The gate's command line in the runner's checkout, with inputs no GitLab checked."""
    args = {**center["inputs"], **inputs}
    command = (f'"$MAPLE_CI_VENV/bin/python" -I -m maple_ci.center {mode} '
               + " ".join(f"--{name} {shlex.quote(value)}" for name, value in args.items())
               + (" --dotenv maple-request.env" if mode == "check" else "") + "\n")
    env = {**center["site"], "CI_DEFAULT_BRANCH": "main", **(variables or {})}
    return shell_runner(center["checkout"])(command, env)


def refused(center, reason: str, variables: dict | None = None, **inputs) -> None:
    record, trace = trigger(center, variables, **inputs)
    assert record["status"] == "failed" and "maple-center-check: refused" in trace and reason in trace, trace
    assert not center["marker"].exists()  # nothing from the request ran


def test_a_valid_request_passes_the_check_with_center_derived_scheduler_options(center):
    code, trace = gate(center)
    assert code == 0, trace
    assert (center["checkout"] / "maple-request.env").read_text() == (
        "SCHEDULER_PARAMETERS=--nodes=2 --time=00:30:00 --constraint=gpu --gpus-per-node=4 --job-name=ddp "
        "--account=center_acct --qos=debug\n")  # 64 nodes and 12 h capped; the script's account, QOS, output dropped
    assert "left to the site: -A -q --reservation --output" in trace
    assert not center["marker"].exists()


@pytest.mark.parametrize("inputs, gitlab_says, gate_says", [
    ({"commit": "main"}, "does not match required RegEx", "is not a full commit id"),
    ({"commit": "abc1234"}, "does not match required RegEx", "is not a full commit id"),
    ({"miniapp": "../../evil"}, "not in the list of allowed options", "miniapp '../../evil' is not one of"),
    ({"script": "scripts/perlmutter/../perlmutter/train.sbatch"}, "does not match", "is not scripts/perlmutter/"),
    ({"script": "/etc/passwd"}, "does not match required RegEx", "is not scripts/perlmutter/<file name>"),
    ({"script": "evil.sh"}, "does not match required RegEx", "is not scripts/perlmutter/<file name>"),
    ({"script": "scripts/perlmutter/.hidden"}, "does not match required RegEx", "is not scripts/perlmutter/"),
    ({"cluster": "a' b"}, "does not match required RegEx", "is not one of this center's clusters"),
])
def test_inputs_outside_their_types_are_refused_by_gitlab_and_by_the_gate(center, inputs, gitlab_says, gate_says):
    record, _ = trigger(center, **inputs)
    assert record["status"] == "refused" and gitlab_says in record["message"]
    code, trace = gate(center, **inputs)
    assert code == 1 and "maple-center-check: refused" in trace and gate_says in trace, trace
    assert not center["marker"].exists()


def test_a_script_of_another_cluster_and_a_cluster_not_the_centers_are_refused(center):
    refused(center, "is not scripts/perlmutter/<file name>", script="scripts/aurora/train.sbatch")
    refused(center, "cluster 'frontier' is not one of this center's clusters", cluster="frontier",
            script="scripts/frontier/train.sbatch")


def test_a_container_image_not_on_the_clusters_allowlist_is_refused(center):
    refused(center, "(docker://someone/pytorch:latest) that is not on perlmutter's list of allowed images",
            script="scripts/perlmutter/image.sbatch")


def test_a_port_that_names_its_sources_container_only_in_a_note_passes(center):
    # maple's header says what it did with the source's image; a comment runs nothing.
    code, trace = gate(center, script="scripts/perlmutter/runs.sbatch")
    assert code == 0, trace


def test_a_commit_on_no_trusted_branch_is_refused(center):
    work = center["work"]
    git(work, "checkout", "--quiet", "-b", "feature")
    (work / "scripts" / "perlmutter" / "train.sbatch").write_text("#!/bin/bash\necho other\n")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-am", "unreviewed")
    commit = git(work, "rev-parse", "HEAD")
    git(work, "push", "--quiet", str(center["mirror"]), "feature")  # on the mirror, neither protected nor maple/port-*
    git(center["checkout"], "fetch", "--quiet", "origin", "feature")  # as the runner does for a pipeline on `feature`
    refused(center, "is on no protected branch", commit=commit)
    git(work, "push", "--quiet", str(center["mirror"]), "feature:maple/port-7")  # the bot's branches are trusted
    code, trace = gate(center, commit=commit)
    assert code == 0 and "SCHEDULER_PARAMETERS=--nodes=1 --time=00:30:00" in trace, trace


def test_an_unknown_commit_is_refused_after_the_wait(center):
    refused(center, "is not in the mirror", commit="0" * 40)


def test_a_symlinked_script_is_refused(center):
    refused(center, "is not a regular file in commit", script="scripts/perlmutter/link.sbatch")


# What a trigger that may still set variables would send: each makes something run the request's
# code (Lmod's module runs LMOD_SETTARG_CMD; git runs a GIT_CONFIG_* core.fsmonitor; bash sources
# BASH_ENV), or stands in for a value the center derives or the bot once sent.
ATTACKS = {
    "LMOD_SETTARG_CMD": {"LMOD_SETTARG_CMD": "{checkout}/evil.sh"},
    "GIT_CONFIG_COUNT": {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": "{checkout}/evil.sh"},
    "BASH_ENV": {"BASH_ENV": "{checkout}/evil.sh"},
    "LD_PRELOAD": {"LD_PRELOAD": "{checkout}/evil.so"},
    "PROMPT_COMMAND": {"PROMPT_COMMAND": "{checkout}/evil.sh"},
    "MODULEPATH": {"MODULEPATH": "{checkout}"},
    "PYTHONPATH": {"PYTHONPATH": "{checkout}"},
    "SCHEDULER_PARAMETERS": {"SCHEDULER_PARAMETERS": "--nodes=512 --account=someone_else"},
    "MAPLE_SCRIPT": {"MAPLE_SCRIPT": "evil.sh"},
}


@pytest.mark.parametrize("name", ATTACKS)
def test_a_variable_the_center_does_not_expect_is_refused(center, name):
    variables = {k: v.format(checkout=center["checkout"]) for k, v in ATTACKS[name].items()}
    refused(center, f"{name} is set", variables)


def test_a_center_that_lets_no_one_set_pipeline_variables_refuses_the_trigger_itself(center):
    record, _ = trigger(center, {"LMOD_SETTARG_CMD": "/bin/true"}, allow_variables=False)
    assert record["status"] == "refused" and "Insufficient permissions to set pipeline variables" in record["message"]


def test_a_path_into_the_checkout_is_refused(center):
    code, trace = gate(center, variables={"PATH": f"{center['checkout']}:/usr/bin:/bin"})
    assert code == 1 and "PATH has" in trace and "in the checkout" in trace, trace


def test_a_bash_env_of_the_site_itself_passes_and_one_a_request_could_write_does_not(center):
    # Lmod gives batch shells `module` through BASH_ENV, so a center's jobs may well start with one:
    # a file only root can change (the test cluster's, as root installs it) is the site's own.
    site_dir = Path(tempfile.mkdtemp(dir=Path.home()))  # root-only all the way up, wherever the checkout is
    try:
        site_file = site_dir / "site-env.sh"
        site_file.write_text((REPO / "tests" / "cluster" / "site-env.sh").read_text())
        code, trace = gate(center, variables={"BASH_ENV": str(site_file)})
    finally:
        shutil.rmtree(site_dir)
    assert code == 0, trace
    writable = center["checkout"] / "site-env.sh"  # same content, in the checkout (under /tmp here)
    writable.write_text((REPO / "tests" / "cluster" / "site-env.sh").read_text())
    for value in (str(writable), f"$(touch {center['marker']})", "tests/cluster/site-env.sh"):
        code, trace = gate(center, variables={"BASH_ENV": value})
        assert code == 1 and "BASH_ENV is set and is not a startup file only root can change" in trace, value
    assert not center["marker"].exists()


def test_a_checkout_whose_git_config_holds_the_job_token_is_refused(center):
    # GitLab Runner before 18.0 clones with https://gitlab-ci-token:<job token>@host/...: the ported
    # script, running as the pipeline's owner, could read it from .git/config.
    git(center["checkout"], "config", "remote.origin.pushurl", "https://gitlab-ci-token:glcbt-secret@gitlab.example/p.git")
    code, trace = gate(center)
    assert code == 1 and "stores a credential in .git/config" in trace, trace


def test_the_batch_job_runs_from_a_copy_of_the_commit_under_an_allowlisted_environment(center):
    # Both jobs for real (a shell stands in for the batch executor): the site lists LMOD_SETTARG_CMD
    # as its own, so it passes the gate; the run's env -i allowlist still leaves it out, and the
    # site's startup file gives the script a working `module`.
    center["inputs"]["script"] = "scripts/perlmutter/runs.sbatch"
    center["site"].update(MAPLE_SITE_VARIABLES="LMOD_SETTARG_CMD", BASH_ENV=SITE_STARTUP,
                          LMOD_SETTARG_CMD=str(center["checkout"] / "evil.sh"))
    record, trace = trigger(center)
    assert record["status"] == "success", trace
    assert "module-ok" in trace and "no-git-here" in trace and '"ok": true' in trace
    assert "maple-center-check: passed" in trace
    assert not center["marker"].exists()
    assert not list(center["checkout"].parent.glob("maple-scratch-*"))  # the copy is removed


def test_the_check_fails_clearly_without_the_centers_maple_ci(center):
    center["site"].pop("MAPLE_CI_VENV")
    record, trace = trigger(center)
    assert record["status"] == "failed" and "MAPLE_CI_VENV does not name the center's maple-ci venv" in trace
    assert not center["marker"].exists()
    jobs = job_script("maple-check") + job_script("maple-verify")
    assert "install" not in jobs and " -m pip" not in jobs  # nothing installed at job time


def test_the_batch_job_must_run_with_the_derived_options(center):
    code, trace = gate(center, "verify", {"SCHEDULER_PARAMETERS": "--nodes=64 --time=12:00:00"})
    assert code == 1 and "the job was submitted with '--nodes=64" in trace


def test_pbs_directives_are_capped_and_the_site_sets_queue_and_account():
    script = ("#!/bin/bash\n#PBS -A proj -q prod -l select=10:ncpus=64:ngpus=4\n#PBS -l walltime=06:00:00"
              " -l filesystems=home:eagle -l place=scatter -o /tmp/x\nmpiexec python train.py\n")
    parameters, dropped = scheduler_parameters(script, max_nodes=2, max_minutes=20, site_options="-A center -q debug",
                                              scheduler="pbs")
    assert parameters == ("-l select=2:ncpus=64:ngpus=4 -l walltime=00:20:00 -l filesystems=home:eagle "
                          "-l place=scatter -A center -q debug")
    assert dropped == ["-A", "-q", "-o"]


def test_a_pbs_select_of_many_chunks_is_capped_in_total():
    # `1:ngpus=4+511:ncpus=64` is 512 chunks: the first number alone said 1 and passed the rest.
    script = "#!/bin/bash\n#PBS -l select=1:ngpus=4+511:ncpus=64\nmpiexec python train.py\n"
    parameters, _ = scheduler_parameters(script, max_nodes=2, max_minutes=20, site_options="", scheduler="pbs")
    assert parameters == "-l select=1:ngpus=4+1:ncpus=64 -l walltime=00:20:00"
    assert cap_select("3:ncpus=8+2:ncpus=4", 4) == "3:ncpus=8+1:ncpus=4"
    assert cap_select("ncpus=8", 2) == "1:ncpus=8"
    for bad in ("1:ngpus=4+", "1:host=$(id)", "1:ncpus=4 -W x"):
        with pytest.raises(ValueError, match="is not \\[N:\\]resource=value"):
            cap_select(bad, 2)


def test_options_with_unsafe_values_are_dropped_not_passed():
    parameters, dropped = scheduler_parameters("#SBATCH --partition='gpu debug' --gres=gpu:4\n#SBATCH -t 10\n",
                                               max_nodes=4, max_minutes=60, site_options="", scheduler="slurm")
    assert parameters == "--nodes=1 --time=00:10:00 --gres=gpu:4" and dropped == ["--partition"]


def test_a_miniapp_name_is_only_ever_the_packages(tmp_path, monkeypatch):
    # `--miniapp ddp` in a checkout holding a file `ddp` (or `ddp.py`) ran that file first.
    monkeypatch.chdir(tmp_path)
    for name in ("ddp", "ddp.py"):
        (tmp_path / name).write_text("print('MAPLE_MINIAPP_RESULT {\"ok\": true}')\n")
    assert resolve_miniapp("ddp") == (miniapps_dir() / "ddp.py").resolve()
    with pytest.raises(MapleError, match="unknown mini-app"):
        resolve_miniapp("ddp.py")
    assert resolve_miniapp("./ddp.py") == tmp_path / "ddp.py"  # a path says so with a slash
