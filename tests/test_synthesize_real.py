"""Synthesis of what real scripts leave open or add (issue 9): sizes chosen at submit time, a
container, a per-rank wrapper, notes from extraction. The intents are what the extractor reads
from scripts written in the style of these public sources:
  https://docs.nersc.gov/machinelearning/launchers/ (srun shifter, --module=gpu,nccl-plugin)
  https://docs.alcf.anl.gov/polaris/data-science/frameworks/pytorch/ (NNODES=$(wc -l < $PBS_NODEFILE))
  https://docs.ncsa.illinois.edu/systems/delta/en/latest/user-guide/containers.html (apptainer --nv)
  https://docs.nvidia.com/nsight-systems/UserGuide/ (srun nsys profile -o ... python train.py)
"""

import re
import shlex
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from maple_ci.errors import MapleError
from maple_ci.intent import Container, JobIntent
from maple_ci.library import get_template
from maple_ci.port import port_intent
from maple_ci.profiles import get_profile
from maple_ci.synthesize import render
from maple_ci.verify.slurm import verify_slurm
from maple_ci.verify.static import checks_ok, static_checks

PIN = "@sha256:" + "ab" * 32  # an image runs on a target only when its site allows it pinned by digest
SHIFTER = Container(runtime="shifter", image=f"nersc/pytorch:24.06{PIN}", options=["--module=gpu,nccl-plugin"])


def submit_time(**update) -> JobIntent:
    """`sbatch -N 4 job.sh` on Perlmutter: no node count in the script, srun one task per GPU."""
    intent = JobIntent(source_cluster="perlmutter", scheduler="slurm", launcher="srun", entrypoint="train.py",
                       script_args=["--epochs", "3"], gpus_per_node=4, account="m1234_g")
    return replace(intent, **update)


def port(template_id: str, intent: JobIntent) -> str:
    template = get_template(template_id)
    profile = get_profile(template.cluster)
    if intent.container and intent.container.image:  # the target site lists the source's image
        allowing = profile.container.model_copy(update={"allowed_images": [intent.container.image]})
        profile = profile.model_copy(update={"container": allowing})
    script = render(intent, profile, template, "jobs/train.sh")
    checks = static_checks(script, intent, profile)
    assert checks_ok(checks), [c for c in checks if not c.ok]
    assert not [c for c in checks if c.name.startswith("shellcheck:")], "ports must be shellcheck-clean"
    return script


def launches(script: str, tmp_path: Path, **env) -> list[list[str]]:
    """Run the script with stand-ins for the site's commands; the launchers' argv, as they got them."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("srun", "mpiexec", "ibrun", "mpirun", "module", "conda", "scontrol"):
        (bin_dir / name).write_text('#!/bin/bash\nprintf "%s\\0" "$(basename "$0")" "$@" >> "$STUB_LOG"; printf "\\n" >> "$STUB_LOG"\n')
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "calls"
    run = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin", "STUB_LOG": str(log), "HOME": str(tmp_path), **env})
    assert run.returncode == 0, run.stderr
    calls = [line.split("\0")[:-1] for line in log.read_text().splitlines()]
    return [call for call in calls if call[0] in ("srun", "mpiexec", "ibrun", "mpirun") and "hostname" not in call]


def test_a_slurm_port_sized_at_submit_time_takes_its_size_from_the_allocation(tmp_path):
    script = port("perlmutter-pytorch-ddp", submit_time())
    assert "# Submit: sbatch -N <nodes> scripts/perlmutter/train.sbatch, from the directory" in script
    assert "#SBATCH --nodes=1\n" in script and "directives ask for 1 node(s) when no size is given" in script
    assert "world size" not in script  # no source world size to compare with
    # Submitted with -N 3, the step spans the three nodes the allocation has.
    [srun] = launches(script, tmp_path, SLURM_JOB_NUM_NODES="3", SLURM_JOB_NODELIST="n[1-3]")
    assert "--nodes=3" in srun and "--ntasks-per-node=4" in srun


def test_a_pbs_port_sized_at_submit_time_counts_the_hosts_of_its_node_file(tmp_path):
    script = port("polaris-pytorch-ddp", submit_time(source_cluster="polaris", scheduler="pbs", launcher="mpiexec"))
    assert "# Submit: qsub -l select=<nodes>:system=polaris scripts/polaris/train.pbs, from the directory" in script
    assert "#PBS -l select=1:system=polaris\n" in script
    nodefile = tmp_path / "nodefile"  # PBS lists a host once per rank slot on some sites
    nodefile.write_text("".join(f"x300{n}c0s1b0n0\n" * 4 for n in range(3)))
    [mpiexec] = launches(script, tmp_path, PBS_NODEFILE=str(nodefile), PBS_O_WORKDIR=str(tmp_path))
    assert mpiexec[mpiexec.index("-n") + 1] == "12" and mpiexec[mpiexec.index("--ppn") + 1] == "4"


def test_a_fixed_size_port_still_follows_a_resized_submission(tmp_path):
    script = port("delta-pytorch-ddp", submit_time(nodes=2, launcher="torchrun"))
    assert "#SBATCH --nodes=2\n" in script and "# Submit: sbatch scripts/delta/train.sbatch," in script
    *_, srun = launches(script, tmp_path, SLURM_JOB_NUM_NODES="4", SLURM_JOB_NODELIST="n[1-4]")
    assert "--nnodes=4" in srun and "--nproc_per_node=4" in srun


@pytest.mark.parametrize("template_id, directives, submit", [
    # Aurora's default queue takes at least 2 nodes: the plain submission asks for 2, and says why.
    ("aurora-pytorch-ddp", "#PBS -l select=2\n", "qsub -l select=<nodes> scripts/aurora/train.pbs"),
    # TACC wants the task count with the node count, one torchrun per node.
    ("lonestar6-pytorch-ddp", "#SBATCH --ntasks=1\n", "sbatch -N <nodes> -n <nodes> scripts/lonestar6/train.sbatch"),
])
def test_submit_line_gives_the_size_in_the_targets_form(template_id, directives, submit):
    script = port(template_id, submit_time())
    assert directives in script and f"# Submit: {submit}," in script
    if template_id.startswith("aurora"):
        assert "ask for 2 node(s) (queue debug-scaling takes at least 2)" in script


def test_a_shifter_image_runs_under_apptainer_where_the_image_can_run():
    delta = port("delta-pytorch-ddp", submit_time(nodes=2, launcher="torchrun", container=SHIFTER))
    launch = delta[delta.index("\nsrun --nodes"):]
    assert f"apptainer exec --nv -B /projects,/scratch,/work docker://nersc/pytorch:24.06{PIN} torchrun" in launch
    assert "module load" not in delta  # the image brings the framework
    assert re.search(r"# Note: the source ran the program in a shifter container .*apptainer pull", delta)
    # Per device (Polaris mpiexec): the container wraps the program, after the rank's variables.
    polaris = port("polaris-pytorch-ddp", submit_time(container=SHIFTER))
    assert f"maple-rank \\\n    apptainer exec --nv -B /lus docker://nersc/pytorch:24.06{PIN} python train.py" in polaris
    assert "module load apptainer" in polaris and "conda activate" not in polaris


@pytest.mark.parametrize("template_id, why", [
    ("frontier-pytorch-ddp", "built for x86_64 with nvidia GPUs and OLCF Frontier is x86_64 with amd GPUs"),
    ("vista-pytorch-ddp", "and TACC Vista is aarch64 with nvidia GPUs"),
])
def test_an_image_that_cannot_run_on_the_target_gives_way_to_the_sites_modules(template_id, why):
    script = port(template_id, submit_time(nodes=2, container=SHIFTER))
    assert "apptainer" not in script.split("\nset -eo pipefail\n")[1]
    assert "module load" in script
    assert why in script and "own framework set-up runs it" in script


def test_image_names_follow_the_target_runtime():
    sif = Container(runtime="apptainer", image="/lus/eagle/projects/x/pytorch.sif", options=["--nv"])
    to_shifter = port("perlmutter-pytorch-ddp", submit_time(source_cluster="polaris", container=sif))
    assert "shifter" not in to_shifter.split("\nset -eo pipefail\n")[1] and "not on perlmutter's list of allowed images" in to_shifter
    # A file has no digest to pin: even a site that lists it runs its own set-up instead.
    not_kept = port("delta-pytorch-ddp", submit_time(source_cluster="polaris", launcher="torchrun", container=sif))
    assert "pytorch.sif torchrun" not in not_kept and "not on delta's list of allowed images pinned by digest" in not_kept
    ngc = Container(runtime="apptainer", image=f"docker://nvcr.io/nvidia/pytorch:24.01-py3{PIN}")
    shifter = port("perlmutter-pytorch-ddp", submit_time(source_cluster="delta", container=ngc))
    assert f"shifter --module=gpu,nccl-plugin --image=docker:nvcr.io/nvidia/pytorch:24.01-py3{PIN} python train.py" in shifter
    assert f"shifterimg pull docker:nvcr.io/nvidia/pytorch:24.01-py3{PIN}" in shifter


def test_a_per_rank_wrapper_is_kept_in_front_of_python_and_said_where_it_cannot_be(tmp_path):
    wrapper = ["nsys", "profile", "-o", "$SCRATCH/prof/rank", "--stats=true;id"]
    script = port("perlmutter-pytorch-ddp", submit_time(wrapper=wrapper))
    line = script[script.index("maple-rank \\\n"):].splitlines()[1]
    assert shlex.split(line)[:len(wrapper) + 2] == [*wrapper, "python", "train.py"]
    assert "\"$SCRATCH/prof/rank\" '--stats=true;id' python" in line  # expands, never runs
    assert "# Note: the per-rank wrapper `nsys profile -o $SCRATCH/prof/rank --stats=true;id` is kept" in script
    per_node = port("perlmutter-pytorch-ddp-torchrun", submit_time(launcher="torchrun", wrapper=["./launch.sh"]))
    assert "launch.sh python" not in per_node.replace("# Note", "")
    assert "the per-rank wrapper `./launch.sh` is not kept: torchrun starts the ranks" in per_node


def test_extraction_notes_are_header_comments():
    notes = ["the source's account was a placeholder (<project_name>)", "a note\nrm -rf ~ # that tries to escape"]
    script = port("perlmutter-pytorch-ddp", submit_time(account=None, notes=notes))
    assert "# Note: the source's account was a placeholder (<project_name>)\n" in script
    assert "# Note: a note?rm -rf ~ # that tries to escape\n" in script and "\nrm -rf" not in script
    assert "#SBATCH --account=<ACCOUNT>\n" in script


def test_only_a_missing_entrypoint_refuses_naming_the_option(tmp_path):
    with pytest.raises(MapleError, match=r"job\.sh: cannot port without entrypoint .*--entrypoint"):
        port_intent(submit_time(entrypoint=None, missing=["entrypoint"]), ["perlmutter"], "job.sh", tmp_path)
    assert not list(tmp_path.iterdir())


@pytest.mark.cluster
def test_a_port_sized_at_submit_time_runs_eight_ranks_when_submitted_with_two_nodes(slurm_cluster, tmp_path,
                                                                                     master_port):
    script = port("perlmutter-pytorch-ddp", submit_time())
    assert "#SBATCH --nodes=1\n" in script
    path = tmp_path / "train.sbatch"
    path.write_text(re.sub(r"(?m)^export MASTER_PORT=\d+$", f"export MASTER_PORT={master_port}", script))
    result = verify_slurm(path, miniapp="ddp", timeout=600, env=slurm_cluster.job_env, workdir=tmp_path,
                          submit_options=["-N", "2"])
    assert result.ok, result.message + "\n" + result.log
    assert result.result["world_size"] == 8 and result.result["ranks_seen"] == list(range(8))
    assert result.result["hostnames"] == ["n1", "n2"]


def test_an_argument_reading_the_source_schedulers_variables_reads_the_targets_equivalent(tmp_path):
    """Lightning CLI style (`--trainer.num_nodes=$SLURM_NNODES`): a PBS machine would leave it empty, so
    a port (port_intent, as `maple port` runs it) gives the target's own variable (schedulers/jobvars.py)."""
    intent = submit_time(script_args=["--trainer.num_nodes=$SLURM_NNODES", "--run", "${SLURM_JOB_ID}", "--data",
                                      "$SCRATCH/d", "--world", "$((SLURM_NNODES * 4))"])
    polaris, perlmutter = port_intent(intent, ["polaris", "perlmutter"], "jobs/train.sh", tmp_path)
    launch = next(line for line in polaris.script.splitlines() if "train.py" in line and not line.startswith("#"))
    assert launch.split("train.py ")[1] == '"--trainer.num_nodes=$NNODES" --run "${PBS_JOBID}" --data "$SCRATCH/d" --world "$((NNODES * 4))"'
    assert polaris.status == "ok" and "SLURM_" not in launch
    assert '"--trainer.num_nodes=$SLURM_NNODES" --run "${SLURM_JOB_ID}"' in perlmutter.script  # Slurm sets them there
