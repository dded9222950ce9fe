"""Issue 16, cause 3: one process on one GPU stays one process bound to one GPU on every cluster.

Before the single-device templates, `python3 -u cnn.py` (strategy single, world size 1) was ported
as one rank per device of the target (4 on Perlmutter, 8 on Frontier, 12 on Aurora), and on NVIDIA
targets every copy used cuda:0. The real runs use the local two-node Slurm cluster (tests/cluster/)
and, for PBS, the local backend's emulation; the ddp mini-app reports the world size it saw.
"""

import re
from pathlib import Path

import pytest
from venvs import nested_venv

from maple_ci.extract import extract
from maple_ci.intent import PER_DEVICE_LAUNCHERS
from maple_ci.library import get_template
from maple_ci.port import port_intent
from maple_ci.profiles import load_profiles
from maple_ci.verify.local import verify_local
from maple_ci.verify.slurm import verify_slurm

CLUSTERS = sorted(load_profiles())
# Three shapes of a one-GPU job, from sources not in the corpus: a bare python3 -u under Slurm with
# --gpus=1, a PBS script, and a one-task srun with --gres=gpu:1.
SOURCES = {
    "sbatch": "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus=1\n#SBATCH -t 00:30:00\n#SBATCH -A a1\n"
              "module load pytorch\npython3 -u cnn.py --epochs 5\n",
    "pbs": "#!/bin/bash\n#PBS -l select=1\n#PBS -l walltime=00:30:00\n#PBS -A a1\ncd $PBS_O_WORKDIR\npython cnn.py\n",
    "srun": "#!/bin/bash\n#SBATCH -N 1\n#SBATCH -n 1\n#SBATCH --gres=gpu:1\n#SBATCH -t 01:00:00\n"
            "srun python train.py --lr 0.1\n",
}
# What makes one device the program's: Slurm's per-job GPU request of one (--gpus, --gres), srun's per-task binding,
# or the vendor's visibility variable set to the first device.
BOUND = re.compile(r"^#SBATCH --(gpus(-per-node)?=(\S+:)?1|gres=gpu:(\S+:)?1)$|--gpus-per-task=1 |"
                   r"^export (CUDA_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|ZE_AFFINITY_MASK)=0$", re.M)


def ported(source: str, cluster: str, tmp_path: Path, python_envs=None):
    [result] = port_intent(extract(SOURCES[source], f"{source}.sh"), [cluster], f"{source}.sh", tmp_path,
                           python_envs=python_envs or {})
    assert result.status == "ok", result
    return result


def launch_lines(script: str) -> list[str]:
    body = script[script.index("export MASTER_PORT="):].splitlines()[1:]
    return [line for line in body if line and not line.startswith(("export ", "#"))]


@pytest.mark.parametrize("source", sorted(SOURCES))
@pytest.mark.parametrize("cluster", CLUSTERS)
def test_a_one_gpu_job_stays_one_process_on_one_gpu(cluster, source, tmp_path):
    result = ported(source, cluster, tmp_path)
    script = result.script
    assert result.template == f"{cluster}-single"
    assert re.search(r"^# Job: 1 node\(s\) x 1 ranks = 1 ranks", script, re.M), script
    assert "world size changes" not in script
    [launch] = launch_lines(script)  # one command starts the program, once
    assert re.search(r"\bpython (cnn|train)\.py\b", launch), launch
    assert not re.search(r"--ntasks-per-node=(?!1\b)|--ppn|mpiexec|torchrun|ibrun|mpirun", launch), launch
    if load_profiles()[cluster].devices_per_node > 1:
        assert BOUND.search(script), f"{cluster}: no single device bound\n{script}"


def test_a_multi_gpu_job_is_not_given_the_single_template(tmp_path):
    text = SOURCES["srun"].replace("-n 1", "-n 4").replace("gpu:1", "gpu:4")
    [result] = port_intent(extract(text, "ddp.sh"), ["perlmutter"], "ddp.sh", tmp_path)
    assert result.template != "perlmutter-single" and "--ntasks-per-node=4" in result.script


@pytest.mark.cluster
@pytest.mark.parametrize("cluster", ["perlmutter", "lonestar6"])  # a one-task srun; the batch shell itself
def test_a_one_gpu_port_runs_one_process_on_the_local_cluster(slurm_cluster, cluster, tmp_path, master_port):
    venv = tmp_path / "venv"  # Lonestar6 has no center PyTorch: the user's venv (this machine's torch)
    nested_venv(venv)
    script = ported("sbatch", cluster, tmp_path / "out", {"default": str(venv)}).script
    path = tmp_path / "job.sbatch"
    path.write_text(script.replace("export MASTER_PORT=29500", f"export MASTER_PORT={master_port}"))
    result = verify_slurm(path, miniapp="ddp", timeout=600, env=slurm_cluster.job_env, workdir=tmp_path)
    assert result.ok, result.log[-3000:]
    assert result.result["world_size"] == 1 and result.result["ranks_seen"] == [0]


@pytest.mark.cluster
def test_a_one_gpu_pbs_port_runs_one_process(slurm_cluster, tmp_path, master_port):
    # The local backend emulates PBS (two nodes on this machine) with the test site's module set-up.
    script = ported("pbs", "polaris", tmp_path / "out").script
    path = tmp_path / "job.pbs"
    path.write_text(script.replace("export MASTER_PORT=29500", f"export MASTER_PORT={master_port}"))
    result = verify_local(path, miniapp="ddp", nodes_hosts=2, timeout=600, env=slurm_cluster.job_env,
                          workdir=tmp_path)
    assert result.ok, result.log[-3000:]
    assert result.result["world_size"] == 1 and result.result["ranks_seen"] == [0]


def test_a_one_process_job_that_asks_for_more_nodes_keeps_them_and_says_so(tmp_path):
    # The size is the source's: a program may start workers of its own on the other nodes; the
    # port does not shrink the job, it names the mismatch, and the static check fails it (loud).
    # Its world is still one process (no note of a world size that changes to one per node).
    text = SOURCES["sbatch"].replace("#SBATCH -N 1", "#SBATCH -N 2")
    [result] = port_intent(extract(text, "two.sh"), ["perlmutter"], "two.sh", tmp_path)
    assert "#SBATCH --nodes=2" in result.script
    assert "the program starts once (one process on one GPU) but the source asks for 2 nodes" in result.script
    assert "world size changes" not in result.script
    assert result.status == "failed"


# --- one launcher per node stays one per node; a rank per GPU stays one (item 2) ---

PER_NODE = ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n#SBATCH -t 01:00:00\n"
            "srun torchrun --nnodes 2 --nproc_per_node 4 --rdzv_backend c10d --rdzv_endpoint $(hostname):29500 train.py\n")
PER_GPU = SOURCES["srun"].replace("-n 1", "-n 8").replace("-N 1", "-N 2").replace("gpu:1", "gpu:4")
# The centers whose documented launch has no per-node torchrun: OLCF ("nesting torchrun within srun
# ... the two task managers will clash", pytorch_frontier) and ALCF Aurora (mpiexec per tile).
NO_PER_NODE = {"frontier", "aurora"}


@pytest.mark.parametrize("source", [PER_NODE, PER_GPU], ids=["torchrun-per-node", "srun-per-gpu"])
def test_the_process_model_is_kept_where_the_target_has_it_and_named_where_not(source, tmp_path):
    intent = extract(source, "job.sh")
    per_device = intent.launcher in PER_DEVICE_LAUNCHERS
    for result in port_intent(intent, CLUSTERS, "job.sh", tmp_path):
        kept = get_template(result.template).launcher in PER_DEVICE_LAUNCHERS
        if kept == per_device:
            assert "the process model changes" not in result.script, result.cluster
        else:
            assert not per_device and result.cluster in NO_PER_NODE, result.cluster
            assert f"{result.cluster} runs pytorch only as one rank per device" in result.script  # the header says so


def test_an_aprun_job_keeps_one_rank_per_device(tmp_path):
    # aprun (like jsrun) starts the ranks itself: it is a per-device launcher, not a per-node one.
    text = ("#!/bin/bash\n#PBS -l select=2:system=polaris\n#PBS -l walltime=01:00:00\n#PBS -A p\n"
            "aprun -n 8 -N 4 --cc depth -d 8 python train.py --epochs 3\n")
    intent = extract(text, "aprun.pbs")
    assert intent.launcher == "aprun"
    for result in port_intent(intent, ["perlmutter", "delta", "lonestar6"], "aprun.pbs", tmp_path):
        assert get_template(result.template).launcher in PER_DEVICE_LAUNCHERS, result.template
