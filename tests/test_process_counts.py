"""Issue 25, class 6: the source's process model read and kept: how many processes its launch starts,
on how many nodes, and how many devices each uses, in forms the reader used to miss.

- One inference server (vLLM, SGLang) drives tensor x pipeline x data-parallel GPUs from one process:
  its world size is what its flags say, its one process gets that many devices in every port (vLLM's
  "Parallelism and Scaling" and "Data Parallel Deployment", SGLang's "Server Arguments", read 2026-11-29).
- A per-node count with no total starts it on every node (Open MPI's mpirun(1) -npernode), and an MPI
  launcher with no count starts one rank per slot (Torque's ppn), and LSF's span[hosts=1] holds every slot
  on one host: as the trace counts them; more ranks than a node's devices is kept or the port fails, naming it.
- Grid Engine's whole-node resource types (`-l f_node=2`) fix the node count as Slurm's -N does.
- One process shown a device list by the script (`CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1}`)
  uses those devices (bash's ${parameter:-word}: the list where the scheduler set none).

Scripts written for these tests, in styles the corpus does not hold. Grid Engine and Torque cannot run
here: their directives are read against qsub(1)'s published forms (the units' docstrings cite them).
"""

from pathlib import Path

import pytest

from maple_ci.extract import extract_script
from maple_ci.port import port_intent
from maple_ci.trace import trace_script
from maple_ci.trace.compare import compare, header_of

SERVERS = {
    # (launch line, GPUs the server drives)
    "vllm short flags": ("vllm serve org/model -tp 2 -pp 2 --port 8801", 4),
    "vllm data parallel": ("python3 -m vllm.entrypoints.openai.api_server --model org/m --data-parallel-size 2 "
                           "--tensor-parallel-size 2", 4),
    "sglang tp and dp sizes": ("python -m sglang.launch_server --model-path org/m --tp-size 2 --dp-size 2", 4),
    "sglang tp alone": ("python -m sglang.launch_server --model-path org/m --tp 2", 2),
}

# The static reading counts what the trace (the launchers' and schedulers' documented behaviour) starts.
COUNTED = {
    "Open MPI -npernode alone": ("#!/bin/bash\n#SBATCH --nodes=2 --gres=gpu:4 --time=20\n"
                                 "mpirun -npernode 8 --bind-to none python solver.py --steps 10\n", (2, 8, 16)),
    "Torque ppn slots": ("#!/bin/bash\n#PBS -l nodes=2:ppn=8:gpus=4\n#PBS -l walltime=00:30:00\n"
                         "mpirun python solver.py\n", (2, 8, 16)),
    # IBM LSF 10.1 "Span string": span[hosts=1] puts every slot on one host
    "LSF span[hosts=1]": ("#!/bin/bash\n#BSUB -n 6\n#BSUB -R \"span[hosts=1]\"\n#BSUB -gpu \"num=6\"\n#BSUB -W 30\n"
                          "mpirun -np 6 python solver.py\n", (1, 6, 6)),
}


def write(tmp_path: Path, text: str, files: dict = None, name: str = "job.sh") -> Path:
    for file, body in (files or {}).items():
        (tmp_path / file).write_text(body)
    (tmp_path / name).write_text(text)
    return tmp_path / name


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_an_engine_servers_world_is_what_its_size_flags_say(kind, tmp_path):
    """No GPU directive: the server's flags give its devices, on one node."""
    launch, devices = SERVERS[kind]
    text = f"#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --time=30\n{launch}\n"
    intent = extract_script(text, tmp_path, "job.sh", tmp_path)
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (1, devices, devices)
    assert intent.processes() == 1


def test_an_engine_servers_directives_give_its_devices_where_they_ask(tmp_path):
    text = "#!/bin/bash\n#SBATCH --gres=gpu:a40:4\n#SBATCH -t 60\nvllm serve org/m --tensor-parallel-size 2\n"
    intent = extract_script(text, tmp_path, "job.sh", tmp_path)
    assert (intent.gpus_per_node, intent.world_size) == (4, 2)


STARTED_ONCE = {"by bash": "python -m sglang.launch_server --model-path org/m --tp 4",
                "by a one-task srun": "srun -n 1 python3 -m vllm.entrypoints.openai.api_server --model org/m -tp 4"}


@pytest.mark.parametrize("target", ["perlmutter", "polaris", "frontier"])
@pytest.mark.parametrize("started", sorted(STARTED_ONCE))
def test_a_ported_engine_server_is_one_process_with_its_devices_and_the_gate_agrees(started, target, tmp_path):
    """The port starts the server once, carries its flags, and gives it the four devices; the trace
    (the oracle) sees one process with four devices on both sides. No note of another process count."""
    text = f"#!/bin/bash\n#SBATCH -N 1 --gpus-per-node=4 -t 45\n{STARTED_ONCE[started]}\n"
    path = write(tmp_path, text)
    intent = extract_script(text, tmp_path, "job.sh", tmp_path)
    [result] = port_intent(intent, [target], "job.sh", tmp_path / "out", source_text=text,
                           python_envs={"default": "/site/envs/serving"})
    assert result.status == "ok", [c.message for c in result.checks if not c.ok]
    assert "one process with 4 devices" in header_of(result.script)
    assert "world size changes" not in header_of(result.script)
    assert "process(es) per node" not in header_of(result.script)
    back = extract_script(result.script)
    assert back.script_args == intent.script_args and back.processes() == 1
    source = trace_script(path, checkout=tmp_path, gpus=4)
    port = trace_script(path, cluster=target, nodes=1, checkout=tmp_path, text=result.script)
    [rank] = port.ranks
    assert rank.devices == "all" if target == "polaris" else len(rank.devices.split(",")) == 4  # Polaris: 4 a node
    assert compare(source, port, header_of(result.script)) == []


def test_npernode_without_a_total_starts_that_many_on_every_node_and_the_port_is_loud(tmp_path):
    """Eight ranks per node of four GPUs (two ranks share each): the port cannot start one per device
    silently."""
    text = COUNTED["Open MPI -npernode alone"][0]
    intent = extract_script(text, tmp_path, "job.sh", tmp_path)
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (2, 4, 16)
    [result] = port_intent(intent, ["perlmutter"], "job.sh", tmp_path / "out", source_text=text)
    assert result.status != "ok"
    assert "the source starts 8 process(es) per node" in header_of(result.script)


def test_grid_engines_whole_node_type_fixes_the_node_count_and_the_port_keeps_it(tmp_path):
    """`-l node_f=2` (a TSUBAME-style whole-node type) with one process: the job holds two nodes; the
    port holds them too, starts the one process once and names the mismatch; the static check fails
    it (loud: a program may start workers of its own there, test_single_device's rule)."""
    text = "#!/bin/sh\n#$ -cwd\n#$ -l node_f=2\n#$ -l h_rt=0:45:00\npython3 fit.py --epochs 2\n"
    intent = extract_script(text, tmp_path, "job.sh", tmp_path)
    assert (intent.scheduler, intent.nodes, intent.world_size) == ("sge", 2, 1)
    [result] = port_intent(intent, ["perlmutter"], "job.sh", tmp_path / "out", source_text=text)
    assert result.status == "failed"
    back = extract_script(result.script)
    assert (back.nodes, back.processes()) == (2, 1)
    assert "the source asks for 2 nodes" in header_of(result.script)
    assert "world size changes" not in header_of(result.script)


def test_one_process_uses_the_device_list_its_script_defaults_to(tmp_path):
    """No GPU directive; the script shows its one process two devices (DataParallel's)."""
    text = ("#!/usr/bin/env bash\n#SBATCH -N 1 -t 90\nexport CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1}\n"
            "python fit.py --dp\n")
    intent = extract_script(text, tmp_path, "job.sh", tmp_path)
    assert (intent.gpus_per_node, intent.world_size) == (2, 1)


def test_a_job_that_sets_no_device_list_is_one_process_on_one_device(tmp_path):
    """The default list is read only from the script's own assignment: a list from outside stays unknown."""
    text = "#!/bin/bash\n#SBATCH -N 1 -t 90\nexport CUDA_VISIBLE_DEVICES=$GPUS\npython fit.py\n"
    assert extract_script(text, tmp_path, "job.sh", tmp_path).gpus_per_node == 1


@pytest.mark.parametrize("kind", sorted(COUNTED))
def test_the_static_reading_counts_the_ranks_the_trace_starts(kind, tmp_path):
    text, (nodes, per_node, world) = COUNTED[kind]
    path = write(tmp_path, text, {"solver.py": "import torch\n"})
    intent = extract_script(text, tmp_path, "job.sh", tmp_path)
    assert (intent.nodes, intent.world_size) == (nodes, world)
    [launch] = trace_script(path, checkout=tmp_path).launches
    assert (len(launch["nodes"]), launch["per_node"], launch["ranks"]) == (nodes, per_node, world)
