"""Processes per node, kept or named (issue 25, class 6): a source that starts one process per node
(or any count other than one per device) is ported with that count, or the port's header names the
change so that the trace gate passes it as named, never silently.

The launchers' semantics come from their manuals (grammars.yaml cites each); the schedulers other than
Slurm (PBS, LSF, Flux) are the trace's stand-ins, emulated from their documents, not real ones. Every
script here is this file's own: option spellings and layouts the corpus does not hold.
"""

from pathlib import Path

import pytest

from maple_ci.extract import extract_script
from maple_ci.port import port_intent
from maple_ci.trace import trace_script
from maple_ci.trace.compare import _per_node, compare, header_of

# One process per node under four schedulers and their launchers, each of which sees the whole node.
ONE_PER_NODE = {
    # PALS mpiexec: --ppn 1 ranks per node, --depth cores each (ALCF's Polaris guide)
    "pbs mpiexec --ppn 1": "#!/bin/bash\n#PBS -l select=2:ngpus=4\n#PBS -l walltime=00:30:00\ncd $PBS_O_WORKDIR\n"
                           "mpiexec -n 2 --ppn 1 --depth 64 --cpu-bind depth python fit.py --steps 10\n",
    # jsrun: one resource set per host (-r 1) of one task (-a 1) and six GPUs (-g 6)
    "lsf jsrun -r1 -a1 -g6": "#!/bin/bash\n#BSUB -nnodes 2\n#BSUB -W 30\njsrun -r 1 -a 1 -g 6 -c 42 python fit.py --steps 10\n",
    # flux run -N without -n: one task per node (flux-core job-param-common.rst)
    "flux run -N": "#!/bin/bash\n#flux: -N 2\n#flux: -t 30m\nflux run -N 2 python fit.py --steps 10\n",
    # torch.distributed.launch without --nproc_per_node: one worker (torchrun's default)
    "slurm torch.distributed.launch": "#!/bin/bash\n#SBATCH --nodes 2 --ntasks-per-node 1 --gres gpu:4 -t 30\n"
                                      "srun python -m torch.distributed.launch --use_env --nnodes 2 "
                                      "--rdzv_backend c10d --rdzv_endpoint $(hostname):29400 fit.py --steps 10\n",
}


def _ported(tmp_path: Path, text: str, cluster: str):
    (tmp_path / "fit.py").write_text("import torch\n")
    (tmp_path / "job.sh").write_text(text)
    source = trace_script(tmp_path / "job.sh", checkout=tmp_path)
    [result] = port_intent(extract_script(text, base_dir=tmp_path), [cluster], "job.sh", tmp_path / "out",
                           source_text=text)
    port = trace_script(tmp_path / "job.sh", cluster=cluster, nodes=len(source.allocation.nodes), checkout=tmp_path,
                        text=result.script)
    return source, result, port


@pytest.mark.parametrize("kind", sorted(ONE_PER_NODE))
def test_one_process_per_node_ported_one_per_device_is_named_and_the_gate_agrees(kind, tmp_path):
    source, result, port = _ported(tmp_path, ONE_PER_NODE[kind], "polaris")
    assert _per_node(source) == 1 and _per_node(port) == 4  # the change is real: the port starts one per GPU
    header = header_of(result.script)
    assert "the source starts 1 process(es) per node" in header
    assert [d.kind for d in compare(source, port, "")] == ["processes"]  # without the note, the gate sees it
    assert compare(source, port, header) == []  # with it, the change is named


def test_one_process_in_all_on_several_nodes_is_named(tmp_path):
    """LSF runs the batch script once; a torch.distributed.launch in it (no jsrun) starts one worker
    on one node of the three the job holds."""
    text = "#!/bin/bash\n#BSUB -nnodes 3\n#BSUB -W 20\npython -m torch.distributed.launch --use_env fit.py eval\n"
    source, result, port = _ported(tmp_path, text, "perlmutter")
    assert (source.world(), _per_node(source)) == (1, 1)
    header = header_of(result.script)
    assert "the source starts 1 process(es) per node" in header and "1 on 3 node(s)" in header
    assert compare(source, port, header) == []


def test_open_mpi_ranks_are_told_apart_by_their_launchers_variables(tmp_path):
    """Every rank of an mpirun inside a Slurm job inherits the batch step's SLURM_PROCID=0; the rank is
    Open MPI's OMPI_COMM_WORLD_RANK, so the trace counts three processes on the node, not one."""
    text = "#!/bin/bash\n#SBATCH --ntasks=3 --gres=gpu:3 -t 10\nmpirun python fit.py\n"
    (tmp_path / "fit.py").write_text("import torch\n")
    (tmp_path / "job.sh").write_text(text)
    trace = trace_script(tmp_path / "job.sh", checkout=tmp_path)
    assert [r.rank for r in trace.ranks] == [0, 1, 2]
    assert {r.env.get("SLURM_PROCID") for r in trace.ranks} == {"0"}
    assert _per_node(trace) == 3


def test_a_gpu_count_variable_read_by_a_script_without_gpu_directives_was_asked_at_submit_time(tmp_path):
    """sbatch sets SLURM_GPUS_ON_NODE only for a job that asks for GPUs: a script with no GPU directive
    that sizes torchrun by it is submitted with them (`sbatch --gpus-per-node=4`), so the trace gives
    the job the node's GPUs and the one-per-device port agrees with it."""
    text = ("#!/bin/bash\nset -eu\nexport HEAD=$(hostname)\n"
            "srun -N \"$SLURM_NNODES\" --ntasks-per-node 1 torchrun --nnodes \"$SLURM_NNODES\" "
            "--nproc_per_node \"$SLURM_GPUS_ON_NODE\" --rdzv_backend c10d --rdzv_endpoint \"$HEAD:29400\" fit.py\n")
    source, result, port = _ported(tmp_path, text, "polaris")
    assert source.job_env["SLURM_GPUS_ON_NODE"] == str(source.allocation.gpus_per_node)
    assert _per_node(source) == source.allocation.gpus_per_node
    assert not [d for d in compare(source, port, header_of(result.script)) if d.kind == "processes"]
    # a script that reads no such count keeps a job without GPU variables
    (tmp_path / "plain.sh").write_text("#!/bin/bash\nsrun python fit.py\n")
    assert "SLURM_GPUS_ON_NODE" not in trace_script(tmp_path / "plain.sh", checkout=tmp_path).job_env


@pytest.mark.parametrize("cluster, written", [("aurora", "12"), ("vista", "1")])
def test_an_argument_carrying_the_ranks_per_node_gets_the_ports_count_and_says_so(cluster, written, tmp_path):
    """The program's per-node argument follows the port's processes per node, written out: the
    target's own Slurm sets SLURM_NTASKS_PER_NODE only when the port's directives ask for that count."""
    text = ("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node 4\n#SBATCH --gpus-per-node 4\n#SBATCH -t 20\n"
            "srun python fit.py --procs-per-host=$SLURM_NTASKS_PER_NODE\n")
    source, result, port = _ported(tmp_path, text, cluster)
    assert port.ranks[0].program[-1] == f"--procs-per-host={written}"  # never empty
    header = header_of(result.script)
    assert f"--procs-per-host=$SLURM_NTASKS_PER_NODE (4 in the source" in header
    assert not [d for d in compare(source, port, header) if d.kind == "program"]


def test_an_argument_carrying_an_unchanged_ranks_per_node_keeps_the_targets_own_variable(tmp_path):
    text = ("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node 4\n#SBATCH --gpus-per-node 4\n#SBATCH -t 20\n"
            "srun python fit.py --procs-per-host=$SLURM_NTASKS_PER_NODE\n")
    source, result, port = _ported(tmp_path, text, "perlmutter")
    assert "python fit.py \"--procs-per-host=$SLURM_NTASKS_PER_NODE\"" in result.script  # perlmutter's job sets it
    assert port.ranks[0].program[-1] == "--procs-per-host=4"
    assert "processes per node" not in header_of(result.script)


def test_flux_run_with_nodes_and_no_task_count_starts_one_task_per_node():
    intent = extract_script("#!/bin/bash\n#flux: -N 3\nflux run --nodes=3 python fit.py\n")
    assert (intent.nodes, intent.world_size) == (3, 3)
    intent = extract_script("#!/bin/bash\n#flux: -N 3\nflux run --nodes=3 --ntasks=12 python fit.py\n")
    assert (intent.nodes, intent.world_size) == (3, 12)
