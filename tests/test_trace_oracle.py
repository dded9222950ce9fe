"""The trace as the oracle (issue 25, unseen sets c and d): what it emulates for launchers and machine
queries must be what the real tools do, by their own documents, or a right port fails and a wrong
one passes. Each test is a small script of this file's own style, not one of the held-out cases.

Facts and where they come from (grammars.yaml and the trace modules cite each):
- mpirun/mpiexec with no -n start one process per slot of the allocation, its task count (Open MPI's
  mpirun(1); MPICH Hydra under Slurm: checked here on the local test cluster, MPICH 4.0.2);
- a Slurm task count with no node count takes as few nodes as hold it (sbatch(1) -N; the local cluster);
- jsrun gives each task the GPUs of its resource set (OLCF's jsrun quick start), and a node holds
  -r sets of -g GPUs. LSF does not run here: that part is against the published guide.
- nvidia-smi's list and csv queries answer with the node's devices, csv with its header line;
  torch's device count and the launchers that count devices see CUDA_VISIBLE_DEVICES's list;
- accelerate with no config starts one process per device; srun -r N starts at node N; PBS job-wide
  totals fill nodes (the PBS unit's rule); a port must keep a one-device binding or name it.
"""

from pathlib import Path

import pytest

from maple_ci.trace import trace_script
from slurm_jobs import run_job

# Writes where a process ran on the real cluster, one file a rank (Hydra's PMI_RANK; the processes'
# printed lines would interleave); the trace records it without running it.
SHOW = "import os, socket\nopen('proc-' + os.environ.get('PMI_RANK', '0'), 'w').write(socket.gethostname())\n"

# Directive spellings of this file's own; a launcher with no count, so the allocation decides.
SLOTS = {
    "-n 4, no node count": ("#!/bin/bash\n#SBATCH --ntasks 4\n#SBATCH -t 2\nmpiexec python3 show.py\n", [4]),
    "3 tasks a node on 2 nodes": ("#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node 3 -t 2\nmpirun python3 show.py\n", [3, 3]),
    "3 tasks over 2 nodes": ("#!/bin/bash\n#SBATCH --nodes=2 --ntasks=3\n#SBATCH -t 2\nmpiexec python3 show.py\n", [2, 1]),
}


def traced(tmp_path: Path, text: str, **files) -> object:
    for name, content in {"show.py": SHOW, "job.sh": text, **files}.items():
        (tmp_path / name).write_text(content)
    return trace_script(tmp_path / "job.sh", checkout=tmp_path)


def per_node(ranks: list) -> list:
    """Processes on each node, in the order the nodes first appear."""
    nodes = list(dict.fromkeys(r.node for r in ranks))
    return [sum(r.node == n for r in ranks) for n in nodes]


@pytest.mark.parametrize("case", sorted(SLOTS))
def test_mpirun_without_n_starts_one_process_per_slot_of_the_allocation(case, tmp_path):
    text, expected = SLOTS[case]
    trace = traced(tmp_path, text)
    assert per_node(trace.ranks) == expected
    assert {r.world for r in trace.ranks} == {sum(expected)}


def ran(tmp_path: Path, text: str, cluster) -> list:
    run_job(tmp_path, text, SHOW, cluster)
    hosts = [path.read_text() for path in sorted(tmp_path.glob("proc-*"))]
    return sorted((hosts.count(h) for h in dict.fromkeys(hosts)), reverse=True)


@pytest.mark.cluster
def test_the_slot_counts_are_what_real_mpich_starts_under_slurm(tmp_path, slurm_cluster):
    """The local test cluster's Slurm and MPICH (Hydra reads SLURM_TASKS_PER_NODE), one job of the three."""
    text, expected = SLOTS["3 tasks over 2 nodes"]
    assert ran(tmp_path, text, slurm_cluster) == expected


def test_a_wrapper_without_its_execute_bit_keeps_the_ranks_variables(tmp_path):
    """An affinity wrapper (`#!/bin/bash -l`, lost its mode in a copy) is read by bash as the job
    would: each rank keeps its launcher's variables and the device it exports."""
    wrapper = "#!/bin/bash -l\nexport CUDA_VISIBLE_DEVICES=$((3 - PMI_LOCAL_RANK % 4))\nexec \"$@\"\n"
    text = "#!/bin/bash\n#PBS -l select=2:ngpus=4\nN=$(nvidia-smi -L | wc -l)\nmpiexec -n $((2 * N)) --ppn $N ./aff.sh python3 show.py\n"
    trace = traced(tmp_path, text, **{"aff.sh": wrapper})
    assert per_node(trace.ranks) == [4, 4]
    assert [r.devices for r in trace.ranks[:4]] == ["3", "2", "1", "0"] and trace.ranks[5].rank == 5


def test_jsrun_gives_each_task_the_gpus_of_its_resource_set(tmp_path):
    """Summit-style: no GPU directive, `-r 6 -g 1`: six ranks a node, each on its own device, on nodes
    of six devices (the emulated default of four would not hold them)."""
    text = "#!/bin/bash\n#BSUB -nnodes 3\n#BSUB -W 10\njsrun -n 18 -r 6 -a 1 -g 1 -c 7 python show.py\n"
    trace = traced(tmp_path, text)
    assert per_node(trace.ranks)[:2] == [6, 6] and trace.allocation.gpus_per_node == 6
    assert [r.devices for r in trace.ranks[:6]] == ["0", "1", "2", "3", "4", "5"]


def test_jsrun_tasks_of_one_resource_set_share_its_gpus(tmp_path):
    text = "#!/bin/bash\n#BSUB -nnodes 2\n#BSUB -gpu \"num=4\"\njsrun --nrs 4 --rs_per_host 2 --tasks_per_rs 2 --gpu_per_rs 2 python show.py\n"
    trace = traced(tmp_path, text)
    assert [r.devices for r in trace.ranks[:4]] == ["0,1", "0,1", "2,3", "2,3"]
    assert trace.allocation.gpus_per_node == 4


def test_nvidia_smi_answers_with_the_nodes_devices_as_documented(tmp_path):
    text = ("#!/bin/bash\n#SBATCH -N 1 --gpus-per-node=3\n"
            "A=$(nvidia-smi --list-gpus | wc -l)\n"
            "B=$(nvidia-smi --query-gpu=index,name --format=csv | wc -l)\n"
            "C=$(nvidia-smi --query-gpu count --format=csv,noheader | head -1)\n"
            "python show.py $A $B $C\n")
    trace = traced(tmp_path, text)
    assert trace.ranks[-1].program == ["show.py", "3", "4", "3"]  # csv: the header line and one a device



def test_accelerate_without_a_config_or_count_starts_one_process_per_device(tmp_path):
    """accelerate's launcher with no config file: num_processes = the visible device count; a config
    file's count wins."""
    text = "#!/bin/bash\n#PBS -l select=1:ngpus=3\naccelerate launch show.py --epochs 2\n"
    assert [r.rank for r in traced(tmp_path, text).ranks] == [0, 1, 2]
    config = "distributed_type: MULTI_GPU\nnum_processes: 2\n"
    text = "#!/bin/bash\n#PBS -l select=1:ngpus=3\naccelerate launch --config_file acc.yaml show.py\n"
    assert len(traced(tmp_path, text, **{"acc.yaml": config}).ranks) == 2


@pytest.mark.parametrize("totals,nodes", [("-l ngpus=2\n#PBS -l ncpus=24", 1), ("-l ncpus=96\n#PBS -l ngpus=8", 2)])
def test_job_wide_pbs_totals_take_the_nodes_they_fill(totals, nodes, tmp_path):
    """NCI Gadi's `-l ngpus -l ncpus` with no select (the PBS unit's on_nodes, 4 GPUs and 48 cores a
    gpuvolta node): the emulated job has that many nodes, not the trace's default for a size left open."""
    (tmp_path / "job.sh").write_text(f"#!/bin/bash\n#PBS {totals}\n#PBS -l walltime=1:00:00\npython show.py\n")
    (tmp_path / "show.py").write_text(SHOW)
    trace = trace_script(tmp_path / "job.sh", cluster="gadi", checkout=tmp_path)
    assert len(trace.allocation.nodes) == nodes


def test_launchers_that_count_devices_count_the_visible_ones(tmp_path):
    """torch.cuda.device_count() sees only CUDA_VISIBLE_DEVICES's devices (CUDA's guide): deepspeed's,
    accelerate's and torchrun's `gpu` defaults count those, and nvidia-smi (NVML) still lists the node's."""
    text = ("#!/bin/bash\n#PBS -l select=1:ngpus=4\nexport CUDA_VISIBLE_DEVICES=1,3\n"
            "N=$(python -c 'import torch; print(torch.cuda.device_count())')\nS=$(nvidia-smi -L | wc -l)\n"
            "deepspeed show.py --n $N --s $S\n")
    trace = traced(tmp_path, text)
    assert [r.rank for r in trace.ranks] == [0, 1] and trace.ranks[0].program[:5] == ["show.py", "--n", "2", "--s", "4"]
    text = "#!/bin/bash\n#PBS -l select=1:ngpus=4\nCUDA_VISIBLE_DEVICES=0,1,2 torchrun --nproc_per_node=gpu show.py\n"
    assert len(traced(tmp_path, text).ranks) == 3


def test_a_port_that_drops_a_one_device_binding_differs_from_its_source(tmp_path):
    """The source binds each rank to its own device (jsrun -g 1); a port whose ranks all see the node's
    devices differs (a program on cuda:0 would put every rank on one device), one that binds does not."""
    from maple_ci.trace.compare import compare

    source = traced(tmp_path, "#!/bin/bash\n#BSUB -nnodes 2\njsrun -n 8 -r 4 -a 1 -g 1 python show.py\n")
    slurm = "#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=4 --gpus-per-node=4\nsrun {} python show.py\n"
    (tmp_path / "port.sh").write_text(slurm.format(""))
    loose = trace_script(tmp_path / "port.sh", checkout=tmp_path)
    assert [d.kind for d in compare(source, loose, "")] == ["devices"]
    assert compare(source, loose, "# each rank sees all devices of its node") == []  # named in the header
    (tmp_path / "port.sh").write_text(slurm.format("--gpus-per-task=1"))
    assert compare(source, trace_script(tmp_path / "port.sh", checkout=tmp_path), "") == []


def test_srun_relative_starts_the_step_at_that_node_of_the_job(tmp_path):
    """srun(1) -r/--relative N: the step runs from node N of the allocation (a loop of one-node steps; on
    the local test cluster `srun -N1 -n1 -r 1 hostname` in `sbatch -N 2` prints its second node)."""
    text = ("#!/bin/bash\n#SBATCH -N 3 --gpus-per-node=4\n"
            "for i in 0 1 2; do srun -N1 -n1 -r $i python show.py & done\nwait\n")
    assert sorted(r.node for r in traced(tmp_path, text).ranks) == ["n001", "n002", "n003"]


@pytest.mark.parametrize("lines,expected", [("n001 slots=3\nn002 slots=3\n", [3, 3]), ("n001:2\nn002:2\n", [2, 2]),
                                            ("n001\nn001\nn002\nn002\n", [2, 2])])
def test_mpirun_without_n_fills_the_slots_of_its_host_file(lines, expected, tmp_path):
    text = "#!/bin/bash\n#SBATCH -N 2\nmpirun --hostfile hosts.txt python show.py\n"
    assert per_node(traced(tmp_path, text, **{"hosts.txt": lines}).ranks) == expected
