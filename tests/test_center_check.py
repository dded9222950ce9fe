"""The center-side GitLab jobs refuse every request the bot could not have sent, before anything runs.

Each attack is a pipeline of the fake GitLab (tests/fake_gitlab.py, the stand-in for a center's
GitLab: it checks `spec:inputs` and emulates the minimum role for pipeline variables) whose jobs run
the shipped CI file with a shell executor in a clone of a mirror; the committed script (and the files
a variable points at) would touch a marker file if anything the request chose ran. The gate itself
(`python -I -m maple_ci.center`) is also run directly, as a GitLab that checked nothing would.
"""

import base64
import shlex
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from fake_gitlab import REPO, FakeGitLab, center_repo, git, job_script, shell_runner, write_settings
from maple_ci.attestation import public_key, sign
from maple_ci.center.images import unlisted_container
from maple_ci.center.options import scheduler_parameters
from maple_ci.extract import extract
from maple_ci.intent import JobIntent
from maple_ci.library import load_templates
from maple_ci.profiles import get_profile
from maple_ci.retrieve import best_template
from maple_ci.synthesize import render
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
SETTINGS = {"clusters": ["perlmutter"], "max_nodes": 2, "max_minutes": 30,
            "site_scheduler_options": "--account=center_acct --qos=debug", "fetch_wait_seconds": 0}
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
    repo = center_repo(tmp_path, work, SETTINGS)
    inputs = {"cluster": "perlmutter", "script": "scripts/perlmutter/train.sbatch", "miniapp": "ddp",
              "commit": repo["commit"]}
    return {**repo, "marker": marker, "inputs": inputs}


def trigger(center, variables: dict | None = None, allow_variables: bool = True, **inputs) -> tuple[dict, str]:
    """Trigger the shipped pipeline as a trigger token's holder could, and wait for it; a pipeline
    GitLab refused to create comes back as {"status": "refused", "message": ...}."""
    runner = shell_runner(center["checkout"])
    with FakeGitLab(runner, checkout=center["checkout"], site_variables=center["site"],
                    pipeline_variables=allow_variables, center_paths=center["paths"]) as fake:
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
    command = (f'{center["paths"]["/opt/maple-ci/venv"]}/bin/python -I -m maple_ci.center {mode} '
               f'--settings {center["settings"]} '
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


def _unreviewed_branch(center, name: str) -> str:
    """A commit pushed to branch `name` of the mirror and nowhere else; its id."""
    work = center["work"]
    git(work, "checkout", "--quiet", "-b", "feature")
    (work / "scripts" / "perlmutter" / "train.sbatch").write_text(f'#!/bin/bash\ntouch "{center["marker"]}"\n')
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-am", "unreviewed")
    git(work, "push", "--quiet", str(center["mirror"]), f"feature:{name}")
    git(center["checkout"], "fetch", "--quiet", "origin", name)  # as the runner does for a pipeline on it
    return git(work, "rev-parse", "HEAD")


def test_a_commit_on_no_trusted_branch_is_refused(center):
    refused(center, "is on no protected branch", commit=_unreviewed_branch(center, "feature"))


def test_a_maple_port_branch_is_trusted_only_for_a_request_the_bot_signed(center):
    """Attack (security review N11): anyone who can push a branch names it `maple/port-x` and has its
    commit verified. Before the fix the gate trusted the branch by its name and this request passed
    the check; now a port branch counts only with the bot's signature of that commit and script."""
    commit = _unreviewed_branch(center, "maple/port-7")
    refused(center, "counts only for a request the bot signed", commit=commit)
    bot, other = (base64.b64encode(Ed25519PrivateKey.generate().private_bytes_raw()).decode() for _ in range(2))
    write_settings(center["settings"], {**SETTINGS, "bot_keys": [public_key(bot)]})
    script = center["inputs"]["script"]
    refused(center, "is not the bot's signature", commit=commit, attestation=sign(other, commit, script))
    refused(center, "is not the bot's signature", commit=commit,  # the bot's signature of another commit
            attestation=sign(bot, center["commit"], script))
    code, trace = gate(center, commit=commit, attestation=sign(bot, commit, script))
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
    write_settings(center["settings"], {**SETTINGS, "site_variables": ["LMOD_SETTARG_CMD"]})
    center["site"].update(BASH_ENV=SITE_STARTUP, LMOD_SETTARG_CMD=str(center["checkout"] / "evil.sh"))
    record, trace = trigger(center)
    assert record["status"] == "success", trace
    assert "module-ok" in trace and "no-git-here" in trace and '"ok": true' in trace
    assert "maple-center-check: passed" in trace
    assert not center["marker"].exists()
    assert not list(center["checkout"].parent.glob("maple-scratch-*"))  # the copy is removed


def test_the_check_fails_clearly_without_the_centers_maple_ci(center):
    center["paths"]["/opt/maple-ci/venv"] = str(center["checkout"].parent / "no-venv")
    record, trace = trigger(center)
    assert record["status"] == "failed" and "no-venv is not the center's maple-ci venv" in trace
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


def test_settings_a_trigger_sends_as_variables_are_refused_not_obeyed(center):
    """Attack (security review P8): where pipeline variables are allowed, a trigger sets the gate's
    own settings, listing its LMOD_SETTARG_CMD as the site's and raising the caps. Before the fix the
    gate read its settings from those variables and passed the request; now its settings come only
    from the root-only file, and the variables are refused like any other."""
    variables = {"MAPLE_SITE_VARIABLES": "LMOD_SETTARG_CMD", "LMOD_SETTARG_CMD": str(center["checkout"] / "evil.sh"),
                 "MAPLE_MAX_NODES": "512", "MAPLE_CLUSTERS": "perlmutter"}
    refused(center, "MAPLE_SITE_VARIABLES is set", variables)
    code, trace = gate(center, variables=variables)
    assert code == 1 and "LMOD_SETTARG_CMD is set" in trace and "MAPLE_MAX_NODES is set" in trace, trace


def test_settings_in_a_file_others_could_write_are_refused(center, tmp_path):
    writable = tmp_path / "center.toml"  # under /tmp: a folder anyone may write in
    write_settings(writable, SETTINGS)
    center["paths"]["/etc/maple-ci/center.toml"] = str(writable)
    refused(center, "are not a file that only root can change")
    center["paths"]["/etc/maple-ci/center.toml"] = str(center["settings"])
    write_settings(center["settings"], {**SETTINGS, "max_node": 64})  # a misspelt key is no default
    refused(center, "unknown key 'max_node'")


def test_a_job_environment_without_a_usable_lang_passes_the_check(center):
    """Found on the way (security review, other observations): with no usable LANG, Python sets
    LC_CTYPE=C.UTF-8 in its own environment (PEP 538) and the gate refused every request ("LC_CTYPE
    is set"); now a locale variable with a locale's name passes, and one with anything else does not."""
    code, trace = gate(center, variables={"LANG": ""})
    assert code == 0, trace
    code, trace = gate(center, variables={"LC_ALL": "$(touch x)"})
    assert code == 1 and "LC_ALL is set" in trace, trace


# Containers a script on a trusted branch could run its own image with, none of which the gate saw
# before the fix (security review P4): the CSCS Container Engine's EDF as a here-document (what a
# Daint port writes), as a committed file and as a directive; Sarus; Charliecloud; a uenv image.
UNSEEN_IMAGES = {
    "edf-heredoc": 'cat > "$PWD/env.toml" <<EOF\nimage = "mallory#pytorch:latest"\nEOF\n'
                   'srun --environment="$PWD/env.toml" python train.py',
    "edf-file": 'srun --environment="$PWD/tools/env.toml" python train.py',
    "edf-directive": "#SBATCH --environment=/users/someone/env.toml\nsrun python train.py",
    "sarus": "srun sarus run --mpi docker.io/mallory/pytorch:latest python train.py",
    "charliecloud": "srun ch-run -w /scratch/mallory/pytorch -- python train.py",
    "uenv": "#SBATCH --uenv=/scratch/mallory/pytorch.squashfs:/user-environment\nsrun python train.py",
}


@pytest.mark.parametrize("form", UNSEEN_IMAGES)
def test_a_container_form_maple_does_not_write_for_the_cluster_is_refused(center, form):
    """Attack (security review P4): each form ran its image past the gate before the fix (only
    Apptainer/Singularity, Shifter, podman-hpc, enroot and Pyxis were recognised); now every container
    word not in a form maple-ci writes for the cluster with an allowed image is refused."""
    script = f'#!/bin/bash\n#SBATCH -N 1 --time=00:05:00\ntouch "{center["marker"]}"\n{UNSEEN_IMAGES[form]}\n'
    work = center["work"]
    (work / "scripts" / "perlmutter" / f"{form}.sbatch").write_text(script)
    git(work, "add", ".")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", form)
    git(work, "push", "--quiet", str(center["mirror"]), "main")
    code, trace = gate(center, script=f"scripts/perlmutter/{form}.sbatch", commit=git(work, "rev-parse", "HEAD"))
    assert code == 1 and "a form maple-ci does not write for perlmutter" in trace, trace
    assert not center["marker"].exists()


def _allowing(cluster: str, image: str):
    profile = get_profile(cluster)
    return profile.model_copy(update={"container": profile.container.model_copy(update={"allowed_images": [image]})})


def test_every_port_maple_writes_passes_the_container_check():
    # The allowlist's other side: each supported row of each cluster, as the port renders it (Daint's
    # own --uenv directive included), names no container the gate refuses.
    intent = JobIntent(nodes=2, entrypoint="train.py", script_args=[])
    for template in load_templates():
        if template.supported:
            script = render(intent, get_profile(template.cluster), template, "job.sh")
            assert unlisted_container(script, get_profile(template.cluster)) is None, template.id


def test_a_daint_port_in_an_allowed_image_passes_and_its_edf_cannot_be_swapped():
    image = "nvcr.io/nvidia/pytorch:25.01-py3@sha256:" + "0" * 64
    source = ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n"
              f"srun --container-image={image.replace('/', '#', 1)} python train.py\n")
    intent = extract(source, "job.sh")
    intent = intent.__class__(**{**intent.__dict__, "source_cluster": "isambard-ai"})  # aarch64, as Daint
    daint = _allowing("daint", image)
    script = render(intent, daint, best_template(intent, "daint"), "job.sh")
    assert '--environment="$PWD/maple-environment-$SLURM_JOB_ID.toml"' in script  # one EDF per job
    assert unlisted_container(script, daint) is None
    swapped = script.replace("nvcr.io#nvidia/pytorch:25.01-py3@", "docker.io#mallory/pytorch:25.01-py3@")
    assert "'maple-environment'" in unlisted_container(swapped, daint)
    assert unlisted_container(script, get_profile("daint")) is not None  # not allowed there: refused
