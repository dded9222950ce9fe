"""The debug loop against real failures on the local Slurm cluster (tests/cluster/): a good
two-node script in Perlmutter's form (srun bash -c torchrun, one agent per node), written for this
cluster's `gpu` partition, gets one fault injected; the loop must fix it from the real error that
Slurm, Lmod or torch printed, and the fixed script must pass a real verification.

Scripts go to sbatch as written (adapt=False): they are already this cluster's, and adaptation
would drop the partition and walltime faults before Slurm saw them.

--nproc_per_node larger than the node's GPUs: the cluster's GPUs are stand-in devices without
CUDA, so the mini-apps run on CPU with gloo, where 8 processes on a node with 4 "GPUs" would form a
process group and pass. On GPU nodes torch.cuda.set_device(LOCAL_RANK) fails with "CUDA error:
invalid device ordinal"; the mini-apps raise the same error when a torchrun worker's local rank is
past the GPUs Slurm allocated to its node (SLURM_GPUS_ON_NODE, CUDA_VISIBLE_DEVICES, which Slurm
sets here as on GPU nodes), naming that count, so KB invalid-device-ordinal sets --nproc_per_node
to the allocation's GPUs per node rather than the profile's.
"""

import socket
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import pytest
from test_debug import make_site

from maple_ci import debug
from maple_ci.verify.slurm import verify_slurm

TRIVIAL = str(Path(__file__).parent / "cluster" / "allreduce_miniapp.py")
# The backend's timeout covers the wait in the queue too, and other tests' jobs share the two
# nodes and two cores; runs that hang (a rendezvous nobody can reach) last this long.
TIMEOUT = 150
NODES, RANKS_PER_NODE = 2, 2
# Used by slurmd on n1 (tests/cluster/slurm.conf.in): a port that is really taken on the first node.
TAKEN_PORT = 6818

# Two GPUs per node, so two of these jobs fit on the cluster's 4-GPU nodes at once. `set -e` as
# in many sites' examples: without it a failed `module load` is a message and the job goes on.
GOOD = textwrap.dedent("""\
    #!/bin/bash
    #SBATCH --partition=gpu
    #SBATCH --time=00:10:00
    #SBATCH --nodes=2
    #SBATCH --ntasks-per-node=1
    #SBATCH --gpus-per-node=2
    set -e
    module load pytorch
    export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
    export MASTER_PORT={port}
    srun bash -c 'torchrun --nnodes=$SLURM_JOB_NUM_NODES --nproc_per_node=2 --node_rank=$SLURM_PROCID \\
        --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT train.py --epochs 10'
    """)


class Fault(NamedTuple):
    good: str  # text of GOOD the fault replaces, once
    bad: str
    entry: str  # the knowledge-base entry the loop must name
    miniapp: str  # trivial where the fault is the scheduler's, a real mini-app where it is launch/env


FAULTS = {
    # The two that hang until the timeout first, so that they wait side by side.
    "wrong MASTER_ADDR": Fault("MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)",
                               "MASTER_ADDR=nid001234", "torch-master-addr-unresolvable", "ddp"),
    "MASTER_PORT in use": Fault("MASTER_PORT={port}", f"MASTER_PORT={TAKEN_PORT}", "torch-master-port-in-use", "ddp"),
    "unknown partition": Fault("--partition=gpu\n", "--partition=gpuA100x4\n", "slurm-invalid-partition", TRIVIAL),
    "walltime over the limit": Fault("--time=00:10:00", "--time=02:00:00", "slurm-time-limit-invalid", TRIVIAL),
    "more GPUs than a node has": Fault("--gpus-per-node=2", "--gpus-per-node=8", "slurm-node-config-unavailable",
                                       TRIVIAL),
    # On this cluster it is not only the second node: srun starts every node's task without the
    # batch environment, and Slurm cannot even find bash without PATH (execve() on n1 and n2).
    "srun --export=NONE": Fault("srun bash", "srun --export=NONE bash", "slurm-export-none", "ddp"),
    "missing module": Fault("load pytorch\n", "load pytorch/1.13.1\n", "lmod-unknown-framework-module", "ddp"),
    # Two GPUs allocated per node, four workers per node: local ranks 2 and 3 have no GPU.
    "nproc_per_node over the allocation": Fault("--nproc_per_node=2", "--nproc_per_node=4",
                                                "invalid-device-ordinal", "ddp"),
}


def inject(fault: Fault) -> tuple[str, int]:
    """GOOD with the fault in it (and a free rendezvous port), and the number of the faulty line."""
    assert GOOD.count(fault.good) == 1, fault
    with socket.socket() as probe:  # other runs on this machine may hold any fixed port
        probe.bind(("127.0.0.1", 0))
        script = GOOD.replace(fault.good, fault.bad).format(port=probe.getsockname()[1])
    return script, GOOD[: GOOD.index(fault.good)].count("\n") + 1


def debug_on_cluster(fault: Fault, workdir: Path, env: dict):
    """The faulty script, the number of its faulty line, the loop's report and every run it made."""
    bad, line_no = inject(fault)
    workdir.mkdir()
    results = []

    def run(script: str) -> debug.RunOutcome:
        path = workdir / "job.sbatch"
        path.write_text(script)
        result = verify_slurm(path, miniapp=fault.miniapp, timeout=TIMEOUT, adapt=False, env=env, workdir=workdir)
        results.append(result)
        return debug.RunOutcome(result.ok, result.log)

    report = debug.debug_loop(bad, run, cluster="testslurm", max_iter=2, path="job.sbatch")
    return bad, line_no, report, results


@pytest.fixture(scope="module")
def outcomes(slurm_cluster, tmp_path_factory, request):
    """Every selected fault (pytest -k) debugged on the cluster, two at a time (that many of these
    jobs fit together)."""
    selected = {item.callspec.params["name"] for item in request.session.items
                if item.module is request.module and hasattr(item, "callspec")}
    tmp = tmp_path_factory.mktemp("debug-cluster")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MAPLE_DATA_DIR", str(tmp / "maple-data"))  # similarity search, if a loop fails
        make_site(tmp, mp, [slurm_cluster.default_partition])  # "testslurm": gpu, 1 h, 4 GPUs a node
        # Every collective of the mini-app gives up after 60 s instead of 5 minutes.
        env = {**slurm_cluster.job_env, "MAPLE_MINIAPP_TIMEOUT": "60"}
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {name: pool.submit(debug_on_cluster, fault, tmp / f"fault{i}", env)
                       for i, (name, fault) in enumerate(FAULTS.items()) if name in selected}
            done = {name: future.result() for name, future in futures.items()}
        yield done


@pytest.mark.cluster
@pytest.mark.parametrize("name", FAULTS)
def test_the_loop_fixes_a_real_fault_by_itself_and_the_fix_passes(outcomes, name):
    bad, line_no, report, results = outcomes[name]
    fault = FAULTS[name]
    first, last = results[0], results[-1]
    context = (f"{report.message}\n--- first run ({first.state}):\n{first.log[-3000:]}"
               f"\n--- last run:\n{last.log[-3000:]}")
    assert report.stop_reason == "passed", context
    assert [a.entry_id for a in report.attempts] == [fault.entry], context
    assert not first.ok and last.ok and last.state == "COMPLETED", context
    assert last.result["world_size"] == NODES * RANKS_PER_NODE and last.result["hostnames"] == ["n1", "n2"], context
    # The review suggestion sits on the injected line and, committed, gives the fixed script.
    items = debug.suggestions(bad, report.script, "job.sbatch")
    assert [(s.start_line, s.line) for s in items] == [(line_no, line_no)], items
    assert debug.apply_suggestions(bad, items) == report.script
