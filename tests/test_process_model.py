"""The process model (issue 25): how many processes a job starts per node and which devices each
sees, in the trace (the oracle) and in a port.

The oracle's facts come from the scheduler and launcher documents and, for Slurm, from the local test
cluster (tests/cluster/, Slurm 22.05, `gpu:4` GRES on stand-in devices: Slurm sets the GPU variables
from the GRES it allocates, so the binding shows without real GPUs). The port's rule: it starts one
process per device; where the source starts another count per node, its header says so, and the
trace gate counts the change as named.
"""

from pathlib import Path

import pytest

from maple_ci.extract import extract_script
from maple_ci.port import port_intent
from maple_ci.trace import trace_script
from maple_ci.trace.compare import compare, header_of
from slurm_jobs import run_job

# Prints what a task is and sees, on the real cluster; the trace records it without running it.
SHOW = "import os\nprint('task', os.environ.get('SLURM_PROCID', '0'), os.environ.get('SLURMD_NODENAME'), " \
       "os.environ.get('CUDA_VISIBLE_DEVICES', 'all'))\n"

# Directive spellings and launch lines of this file's own: short options, values after a space, srun
# options that override the job's, a batch step without srun.
CASES = {
    "bare srun inherits -n and --gpus-per-task": "#!/bin/bash\n#SBATCH -N 2\n#SBATCH -n 8\n#SBATCH --gpus-per-task 1\n"
                                                 "#SBATCH -t 2\nsrun python3 show.py\n",
    "the batch step sees its GRES": "#!/bin/bash\n#SBATCH --nodes 1 --ntasks 1 --gres gpu:1 -t 2\npython3 show.py\n",
    "srun --gres gives each task of the step its count": "#!/bin/bash\n#SBATCH -N2 --ntasks-per-node=2 --gpus-per-node=2 -t 2\n"
                                                          "srun --gres=gpu:1 python3 show.py\n",
    "srun without GPU options shares the node's": "#!/bin/bash\n#SBATCH -N2 --ntasks-per-node=2 --gpus-per-node=2 -t 2\n"
                                                  "srun python3 show.py\n",
    "a job that asks for no GPUs sets no device variable": "#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node 1 -t 2\n"
                                                            "srun python3 show.py\n",
}


def _devices(value: str) -> str:
    return value if value == "all" else str(len(value.split(",")))


def traced(tmp_path: Path, text: str) -> list:
    """(rank, node index, device count) of every process the trace records."""
    (tmp_path / "show.py").write_text(SHOW)
    (tmp_path / "job.sh").write_text(text)
    trace = trace_script(tmp_path / "job.sh", checkout=tmp_path)
    nodes = sorted({r.node for r in trace.ranks})
    return sorted((r.rank or 0, nodes.index(r.node), _devices(r.devices)) for r in trace.ranks)


def ran(tmp_path: Path, text: str, cluster) -> list:
    """The same of the job run by the real Slurm."""
    rows = [line.split()[1:] for line in run_job(tmp_path, text, SHOW, cluster).splitlines() if line.startswith("task ")]
    nodes = sorted({node for _, node, _ in rows})
    return sorted((int(rank), nodes.index(node), _devices(devices)) for rank, node, devices in rows)


@pytest.mark.cluster
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_trace_starts_and_binds_what_real_slurm_does(case, tmp_path, slurm_cluster):
    text = CASES[case]
    (tmp_path / "trace").mkdir()
    assert traced(tmp_path / "trace", text) == ran(tmp_path, text, slurm_cluster)


def test_a_bare_srun_starts_the_jobs_tasks_each_on_its_own_gpu(tmp_path):
    """srun(1) INPUT ENVIRONMENT VARIABLES: SLURM_NTASKS is -n, SLURM_GPUS_PER_TASK --gpus-per-task,
    which implies --gpu-bind=per_task (Slurm 22.05.8's man page, read 2026-11-29)."""
    rows = traced(tmp_path, CASES["bare srun inherits -n and --gpus-per-task"])
    assert len(rows) == 8 and {node for _, node, _ in rows} == {0, 1}
    assert [node for _, node, _ in rows].count(0) == 4 and {devices for *_, devices in rows} == {"1"}


def test_the_batch_step_sees_only_the_gpus_the_job_asked_for(tmp_path):
    """https://slurm.schedmd.com/gres.html "GPU Management" (read 2026-11-29): CUDA_VISIBLE_DEVICES
    is set for each step, the batch script's too, to the GPUs allocated on that node."""
    (tmp_path / "show.py").write_text(SHOW)
    (tmp_path / "job.sh").write_text("#!/bin/bash\n#SBATCH --gres=gpu:a100:2 -N 1\npython3 show.py\n")
    trace = trace_script(tmp_path / "job.sh", cluster="perlmutter", checkout=tmp_path)
    assert trace.allocation.gpus_per_node == 4 and trace.ranks[0].devices == "0,1"
    assert trace.job_env["SLURM_GPUS_ON_NODE"] == "2"


def test_accelerates_gpu_ids_become_the_workers_visible_devices(tmp_path):
    (tmp_path / "run.sh").write_text("accelerate launch --num_processes 2 --gpu_ids 2,3 show.py\n")
    (tmp_path / "show.py").write_text(SHOW)
    trace = trace_script(tmp_path / "run.sh", checkout=tmp_path)
    assert [r.devices for r in trace.ranks] == ["2,3", "2,3"]


# Sources that start another count of processes per node than one per device, in styles the corpus
# does not hold: a DeepSpeed launcher told two GPUs on a bare machine, Open MPI ranks by slot under
# PBS with three per node, an accelerate launch pinned to one GPU.
OTHER_COUNTS = {
    "deepspeed": ("bash", "deepspeed --num_gpus 2 train.py --zero 2\n", 2),
    "mpirun": ("pbs", "#!/bin/bash\n#PBS -l select=2:ncpus=64:ngpus=4\n#PBS -l walltime=01:00:00\n"
                      "mpirun -np 6 --map-by ppr:3:node python train.py\n", 3),
    "accelerate": ("bash", "accelerate launch --num_processes 1 --gpu_ids 0 train.py\n", 1),
}


@pytest.mark.parametrize("kind", sorted(OTHER_COUNTS))
def test_a_port_that_changes_processes_per_node_names_it_and_the_gate_agrees(kind, tmp_path):
    _, text, started = OTHER_COUNTS[kind]
    (tmp_path / "train.py").write_text("import torch\n")
    (tmp_path / "job.sh").write_text(text)
    intent = extract_script(text, base_dir=tmp_path)
    source = trace_script(tmp_path / "job.sh", checkout=tmp_path)
    [result] = port_intent(intent, ["perlmutter"], "job.sh", tmp_path / "out", source_text=text)
    header = header_of(result.script)
    assert f"the source starts {started} process(es) per node" in header
    port = trace_script(tmp_path / "job.sh", cluster="perlmutter", nodes=len(source.allocation.nodes), checkout=tmp_path,
                        text=result.script)
    processes = [d for d in compare(source, port, "") if d.kind == "processes"]
    assert processes, "the port starts another count per node than the source"  # the change is real
    assert not [d for d in compare(source, port, header) if d.kind == "processes"]  # and named


def test_a_source_one_per_device_keeps_its_model_with_no_process_note(tmp_path):
    text = "#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=4 --gpus-per-task=1\nsrun python train.py\n"
    (tmp_path / "train.py").write_text("import torch\n")
    [result] = port_intent(extract_script(text), ["perlmutter"], "job.sh", tmp_path / "out", source_text=text)
    assert "process(es) per node" not in header_of(result.script)


def test_one_process_given_fewer_than_its_nodes_devices_says_so_and_the_gate_agrees(tmp_path):
    """A bare machine's single process sees every device of it; the single-device port gives it one
    of a shared node's, a deliberate change the header names."""
    text = "#!/bin/sh\nset -e\nexec python3 -u infer.py --batch 8\n"
    (tmp_path / "infer.py").write_text("import torch\n")
    (tmp_path / "run.sh").write_text(text)
    source = trace_script(tmp_path / "run.sh", checkout=tmp_path)
    [result] = port_intent(extract_script(text, base_dir=tmp_path), ["perlmutter"], "run.sh", tmp_path / "out",
                           source_text=text)
    header = header_of(result.script)
    assert "one process that sees 1 of the node's 4 devices" in header
    port = trace_script(tmp_path / "run.sh", cluster="perlmutter", nodes=len(source.allocation.nodes), checkout=tmp_path,
                        text=result.script)
    assert [d.kind for d in compare(source, port, "")] == ["devices"]
    assert compare(source, port, header) == []


def test_a_jax_process_with_a_machine_of_its_own_keeps_the_whole_node(tmp_path):
    """A one-process program that uses every device it sees (JAX) keeps seeing all of its node's."""
    text = "#!/usr/bin/env bash\ncd \"$(dirname \"$0\")\"\npython3 fit.py --epochs 3\n"
    (tmp_path / "fit.py").write_text("import jax\nprint(jax.devices())\n")
    (tmp_path / "go.sh").write_text(text)
    source = trace_script(tmp_path / "go.sh", checkout=tmp_path)
    [result] = port_intent(extract_script(text, base_dir=tmp_path), ["perlmutter"], "go.sh", tmp_path / "out",
                           python_envs={"default": "/site/work/envs/jax"}, source_text=text)
    port = trace_script(tmp_path / "go.sh", cluster="perlmutter", nodes=len(source.allocation.nodes), checkout=tmp_path,
                        text=result.script)
    assert source.ranks[-1].devices == "all" and port.ranks[-1].devices == "0,1,2,3"
    assert compare(source, port, "") == []
