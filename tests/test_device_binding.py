"""A rank's device binding, carried or named (maple_ci/extract/binding.py, maple_ci/binding.py).

A source that binds each rank to one device runs a program that may never pick its device (this
file's programs call `torch.cuda.set_device(0)`): a port that lets every rank see the whole node
puts all of them on device 0. So the port binds each rank in the target's form, or its header says
it cannot; and a port whose launch binds where the source's ranks saw the whole node says that.
Each source below is a small script of this file's own, in the styles the sources bind in (a job-wide
Slurm directive, a step option, a per-rank `bash -c` export, a wrapper script under PBS, an LSF
resource set); the ports are checked by their text and by the trace (maple_ci.trace: bash runs the
port on an emulated allocation of the target and records the devices each rank sees). The Polaris,
Aurora, LUMI and Frontier allocations are the trace's emulation of those machines (stand-ins: no
PBS, PALS, LSF or those sites run here).
"""

from pathlib import Path

import pytest

from maple_ci.extract import extract
from maple_ci.library import get_template
from maple_ci.port import port
from maple_ci.profiles import get_profile
from maple_ci.binding import binding_notes, binds_ranks
from maple_ci.trace import trace_script
from maple_ci.trace.compare import Difference, compare, header_of
from maple_ci.trace.visible import visible_list
from slurm_jobs import run_job

PROGRAM = "import torch\ntorch.cuda.set_device(0)  # relies on the launcher's binding\n"
PICK = "#!/bin/bash\n# one GPU per rank, by the rank's place on its node\nexport CUDA_VISIBLE_DEVICES=$PMI_LOCAL_RANK\nexec \"$@\"\n"

BOUND = {
    "slurm job-wide gpus-per-task": ("#!/bin/bash\n#SBATCH --nodes=2 --ntasks-per-node=4\n#SBATCH --gpus-per-task=1\n"
                                     "#SBATCH --time=00:30:00\nsrun python fit.py --epochs 3\n",
                                     "#SBATCH --gpus-per-task=1, inherited by srun"),
    "srun step option": ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node 4 --gres=gpu:4 -t 30\n"
                         "srun --gpus-per-task 1 python fit.py --epochs 3\n", "srun --gpus-per-task=1"),
    "per-rank export in bash -c": ("#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=4 --gpus-per-node=4 -t 30\n"
                                   "srun bash -c 'export ROCR_VISIBLE_DEVICES=${SLURM_LOCALID}; exec python fit.py --epochs 3'\n",
                                   "ROCR_VISIBLE_DEVICES=${SLURM_LOCALID}"),
    "PBS wrapper script": ("#!/bin/bash\n#PBS -l select=2:ncpus=64:ngpus=4\n#PBS -l walltime=00:30:00\ncd $PBS_O_WORKDIR\n"
                           "mpiexec -n 8 --ppn 4 ./gpu_of_rank.sh python fit.py --epochs 3\n", "./gpu_of_rank.sh"),
    "srun gpu-bind map": ("#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=4 --gpus-per-node=4 -t 30\n"
                          "srun --gpu-bind=verbose,map_gpu:3,2,1,0 python fit.py --epochs 3\n", "srun --gpu-bind=map_gpu:3,2,1,0"),
    "flux per-task affinity": ("#!/bin/bash\n#flux: -N 2\n#flux: -t 30m\n"
                               "flux run -N 2 --tasks-per-node=4 -g 1 -o gpu-affinity=per-task python fit.py --epochs 3\n",
                               "flux run -o gpu-affinity=per-task"),
    "accelerate on one listed GPU": ("#!/bin/bash\naccelerate launch --num_processes 1 --gpu_ids '2' fit.py --epochs 3\n",
                                     "accelerate launch --gpu_ids=2"),
    "LSF resource set of one GPU": ("#!/bin/bash\n#BSUB -nnodes 2\n#BSUB -W 0:30\n"
                                    "jsrun -n 8 -r 4 -a 1 -g 1 -c 7 python fit.py --epochs 3\n", "jsrun -g 1"),
}

UNBOUND = {
    "srun shares the node's GPUs": "#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=4 --gpus-per-node=4\nsrun python fit.py\n",
    "two GPUs per task": "#!/bin/bash\n#SBATCH -N 1 --ntasks-per-node=2 --gpus-per-task=2\nsrun python fit.py\n",
    "the step asks for the node's GPUs": ("#!/bin/bash\n#SBATCH -N 1 --ntasks-per-node=4 --gpus-per-task=1\n"
                                          "srun --gpus-per-node=4 python fit.py\n"),
    "flux's default affinity shares the shell's GPUs": "#!/bin/bash\n#flux: -N 1\nflux run -N 1 -n 4 -g 1 python fit.py\n",
    "accelerate over two listed GPUs": "#!/bin/bash\naccelerate launch --num_processes 2 --gpu_ids 0,1 fit.py\n",
    "a resource set of six GPUs": "#!/bin/bash\n#BSUB -nnodes 1\njsrun -n 1 -a 6 -g 6 python fit.py\n",
}


def _checkout(tmp_path: Path, text: str) -> Path:
    (tmp_path / "fit.py").write_text(PROGRAM)
    wrapper = tmp_path / "gpu_of_rank.sh"
    wrapper.write_text(PICK)
    wrapper.chmod(0o755)
    job = tmp_path / "job.sh"
    job.write_text(text)
    return job


@pytest.mark.parametrize("style", sorted(BOUND))
def test_the_source_binding_is_read_in_its_own_words(style, tmp_path):
    text, words = BOUND[style]
    job = _checkout(tmp_path, text)
    assert extract(text, "job.sh", tmp_path, tmp_path).device_binding == words


@pytest.mark.parametrize("style", sorted(UNBOUND))
def test_ranks_that_see_several_devices_are_not_read_as_bound(style, tmp_path):
    text = UNBOUND[style]
    _checkout(tmp_path, text)
    assert extract(text, "job.sh", tmp_path, tmp_path).device_binding is None


# srun(1) --gpu-bind (https://slurm.schedmd.com/srun.html, read 2026-11-29): single:N gives tasks 0..N-1 the
# step's first GPU, the next N the second; map_gpu:LIST task i LIST's i-th entry (reused from the start);
# per_task:N N GPUs of each task's own; none leaves the step's GPUs shared (real Slurm then sets no
# CUDA_VISIBLE_DEVICES at all: every device, as the trace's list of all four counts them). The local test
# cluster's nodes have gres gpu:4, so the binding forms are checked against its srun too.
GPU_BIND = {"single:2": ["0", "0", "1", "1"], "map_gpu:2,0": ["2", "0", "2", "0"], "per_task:1": ["0", "1", "2", "3"],
            "none": ["0,1,2,3"] * 4}
BIND_JOB = "#!/bin/bash\n#SBATCH -N 1 --ntasks-per-node=4 --gpus-per-node=4 -t 2\nsrun --gpu-bind={} python3 show.py\n"
SHOW_DEVICES = ("import os\nopen('dev-' + os.environ['SLURM_LOCALID'], 'w')"
                ".write(os.environ.get('CUDA_VISIBLE_DEVICES', ''))\n")


@pytest.mark.parametrize("bind", sorted(GPU_BIND))
def test_the_trace_gives_each_srun_task_the_gpus_its_gpu_bind_names(bind, tmp_path):
    job = _checkout(tmp_path, BIND_JOB.format(bind))
    trace = trace_script(job, trusted=True)
    assert [r.devices for r in sorted(trace.ranks, key=lambda r: r.rank)] == GPU_BIND[bind]


@pytest.mark.parametrize("bind", ["single:2", "map_gpu:2,0", "per_task:1"])
def test_real_srun_binds_as_the_trace_says(bind, tmp_path, slurm_cluster):
    run_job(tmp_path, BIND_JOB.format(bind), SHOW_DEVICES, slurm_cluster)
    assert [(tmp_path / f"dev-{i}").read_text() for i in range(4)] == GPU_BIND[bind]


def _ported(tmp_path: Path, text: str, targets: list) -> dict:
    job = _checkout(tmp_path, text)
    # Frontier and El Capitan provide no PyTorch: the user's environment there (paths of this test's own)
    envs = {"frontier": "/ccs/proj/x/torch-env", "elcapitan": "/p/lustre/x/torch-venv"}
    _, results = port(str(job), targets, tmp_path / "scripts", trace=True, python_envs=envs)
    return {r.cluster: r for r in results}


def _port_ranks(tmp_path: Path, result, nodes: int = 2) -> list:
    return trace_script(tmp_path / "job.sh", cluster=result.cluster, nodes=nodes, trusted=True, text=result.script).ranks


def _trace_check(result):
    return next(c for c in result.checks if c.name == "trace")


# Each target's form, and the device its local rank 1 sees: Polaris numbers its GPUs against the
# cores (device order 3,2,1,0), Aurora's ranks are tiles (ZE_AFFINITY_MASK), LUMI's ROCm devices,
# Frontier's srun and El Capitan's flux run bind each task themselves (the trace gives task i device i).
FORMS = {"perlmutter": ("export CUDA_VISIBLE_DEVICES=$SLURM_LOCALID", "1"),
         "polaris": ("devices=(3 2 1 0); export CUDA_VISIBLE_DEVICES=${devices[$PMI_LOCAL_RANK]}", "2"),
         "aurora": ("export ZE_AFFINITY_MASK=$PALS_LOCAL_RANKID", "1"),
         "lumi": ("export ROCR_VISIBLE_DEVICES=$SLURM_LOCALID", "1"),
         "frontier": ("--gpus-per-task=1 --gpu-bind=closest", "1"),
         "elcapitan": ("-o gpu-affinity=per-task", "1")}


@pytest.mark.parametrize("style", ["slurm job-wide gpus-per-task", "PBS wrapper script", "LSF resource set of one GPU"])
def test_a_bound_source_keeps_one_device_per_rank_in_the_targets_form(style, tmp_path):
    results = _ported(tmp_path, BOUND[style][0], sorted(FORMS))
    for cluster, (form, second) in FORMS.items():
        result = results[cluster]
        assert form in result.script, cluster
        assert "LOCAL_RANK=0" in result.script, cluster  # the program sees its device as device 0
        assert _trace_check(result).ok, (cluster, _trace_check(result).message)
        ranks = [r for r in _port_ranks(tmp_path, result) if r.rank is not None]
        first_node = [r for r in ranks if r.node == ranks[0].node]
        assert all(len(r.devices.split(",")) == 1 for r in ranks), (cluster, [r.devices for r in ranks])
        assert len({r.devices for r in first_node}) == len(first_node), cluster  # each rank its own device
        assert next(r.devices for r in first_node if r.rank == 1) == second, cluster


def test_a_source_whose_ranks_see_the_node_stays_unbound_where_the_target_does_not_bind(tmp_path):
    result = _ported(tmp_path, UNBOUND["srun shares the node's GPUs"], ["perlmutter"])["perlmutter"]
    assert "VISIBLE_DEVICES=$SLURM_LOCALID" not in result.script
    assert "LOCAL_RANK=$SLURM_LOCALID" in result.script
    assert {r.devices for r in _port_ranks(tmp_path, result) if r.rank is not None} == {"0,1,2,3"}  # the node's 4
    assert _trace_check(result).ok


def test_a_port_whose_launch_binds_where_the_source_did_not_says_so(tmp_path):
    """Frontier's srun shows each task one GCD; the source's ranks each saw the node's 4 GPUs."""
    text = UNBOUND["srun shares the node's GPUs"]
    result = _ported(tmp_path, text, ["frontier"])["frontier"]
    header = header_of(result.script)
    assert "each rank of the port sees only its own device" in header and "SLURM_LOCALID" in header
    assert _trace_check(result).ok
    source = trace_script(tmp_path / "job.sh", trusted=True)
    port_trace = trace_script(tmp_path / "job.sh", cluster="frontier", nodes=2, trusted=True, text=result.script)
    # the gate holds the change against a header that does not say it, even one that says "devices"
    found = compare(source, port_trace, "# Note: world size changes (2 nodes x 8 devices)")
    assert [d.kind for d in found] == ["devices"] and "sees 4 of its node's 4 devices" in found[0].message


def test_the_note_follows_the_templates_shape():
    intent = extract(BOUND["srun step option"][0], "job.sh")
    profile = get_profile("abci3")
    per_device, per_node = get_template("abci3-pytorch-ddp"), get_template("abci3-pytorch-ddp-torchrun")
    assert "sets CUDA_VISIBLE_DEVICES to the rank's own device" in binding_notes(intent, profile, per_device, 8)[0]
    lost = binding_notes(intent, profile, per_node, 8)[0]
    assert "the source binds each rank to one device (srun --gpus-per-task=1)" in lost
    assert "torchrun starts 8 workers per node and each worker sees all 8" in lost and "device 0" in lost
    # the trace gate reads the note as naming the devices a rank sees (trace/compare.py)
    assert Difference("devices", "", ("sees", "devices")).named_in(lost)
    assert binding_notes(intent, profile, per_node, 1) == []  # one device a node: nothing shared
    vista = get_profile("vista")  # one GH200 a node: nothing to bind
    assert not binds_ranks(intent, vista, get_template("vista-generic")) and \
        binding_notes(intent, vista, get_template("vista-generic"), 1) == []
    assert binds_ranks(intent, profile, per_device) and not binds_ranks(intent, profile, per_node)


# What a program sees (maple_ci/trace/visible.py): ROCm applies ROCR_VISIBLE_DEVICES first and HIP's (else
# CUDA's) list as indices into it (ROCm's GPU isolation page); CUDA's list equal to ROCr's is Slurm's one
# assignment written into both (Slurm never writes HIP's).
VISIBLE = [({"ROCR_VISIBLE_DEVICES": "3", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}, ["3"]),  # LUMI's select_gpu
           ({"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "1"}, []),  # index 1 of one device: none
           ({"ROCR_VISIBLE_DEVICES": "4,5", "HIP_VISIBLE_DEVICES": "1", "CUDA_VISIBLE_DEVICES": "0"}, ["5"]),
           ({"CUDA_VISIBLE_DEVICES": "2,0"}, ["2", "0"]),
           ({"CUDA_VISIBLE_DEVICES": "2", "ROCR_VISIBLE_DEVICES": "2", "GPU_DEVICE_ORDINAL": "2"}, ["2"]),
           ({}, None)]


@pytest.mark.parametrize("env, seen", VISIBLE)
def test_the_devices_a_program_sees_follow_the_runtimes_layering(env, seen):
    assert visible_list(env) == seen
