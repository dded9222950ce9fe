"""How a job starts its program, and when a port may start it differently.

Three process models: one process; one launcher per node that forks a worker per device
(torchrun, deepspeed, accelerate); one rank per device started by the scheduler or MPI (srun,
mpiexec, ibrun). A port keeps the source's model. The deliberate exceptions, each said in the
port's header and the only changes the read-back gate (verify/readback.py) accepts: a target that
runs the framework and strategy only one other way (no supported template there starts the
source's model, e.g. OLCF's srun per GCD for PyTorch on Frontier), and a Lightning program, which
runs one rank per device (retrieval's rule: Lightning's SLURM/MPI environments expect it).
"""

import re
from functools import lru_cache
from typing import Optional

from .intent import JobIntent
from .library import TemplateMeta, load_templates
from .paths import templates_dir
from .profiles import ClusterProfile

ONE_PROCESS, PER_NODE, PER_DEVICE = "one process", "one launcher per node", "one rank per device"
# The launchers that run once per node and fork the per-device workers (DESIGN.md, JobIntent's
# launcher); every other launcher (srun, mpiexec, mpirun, ibrun, aprun, jsrun) starts the ranks.
PER_NODE_LAUNCHERS = frozenset({"torchrun", "deepspeed", "accelerate"})


def process_model(intent: JobIntent) -> str:
    """The model a job (a source, or a port read back) starts its program with: a launcher per node
    stays one with a single worker (torchrun --nproc_per_node=1 on a one-GPU node)."""
    if intent.launcher in PER_NODE_LAUNCHERS:
        return PER_NODE
    return ONE_PROCESS if intent.launcher == "python" else PER_DEVICE


def same_model(one: JobIntent, other: JobIntent) -> bool:
    """Whether two jobs start their program the same way: one rank started by srun or mpiexec
    (srun -n 1 python x.py) is one process too, and so is a launcher per node with one worker on one node."""
    models = {process_model(one), process_model(other)}
    if one.processes() == other.processes() == 1:
        return True  # one process however it is started (torchrun --nproc_per_node 1 on one node, srun -n 1)
    single = 1 in (one.processes(), other.processes())
    return len(models) == 1 or (models == {ONE_PROCESS, PER_DEVICE} and single)


def model_given(intent: JobIntent) -> bool:
    """Whether the source says how its program starts: a request in words (or a bare command) for
    several devices leaves the process model to the target's templates."""
    return not (intent.scheduler == "none" and intent.launcher == "python" and intent.processes() != 1)


def template_model(template: TemplateMeta) -> str:
    if template.strategy == "single" or template.launcher == "python":
        return ONE_PROCESS
    return PER_NODE if template.launcher in PER_NODE_LAUNCHERS else PER_DEVICE


def forced_change(intent: JobIntent, template: TemplateMeta) -> Optional[str]:
    """The model the target forces on this port (no supported template there for the same framework
    and strategy starts the source's model), or None when the port must keep the source's model."""
    want, got = process_model(intent), template_model(template)
    if want == got or (got == ONE_PROCESS and intent.processes() == 1) or not model_given(intent):
        return None
    if intent.framework == "lightning" and got == PER_DEVICE:
        return got  # retrieval's rule: Lightning's SLURM/MPI environments expect the scheduler to start every rank
    keeps = (template.cluster, template.framework, template.strategy, want) in _supported(str(templates_dir()))
    return None if keeps else got


@lru_cache(maxsize=4)
def _supported(library: str) -> frozenset[tuple[str, str, str, str]]:
    """(cluster, framework, strategy, model) of every supported template in the library folder;
    read once per folder (parsing every template costs ~15 ms, and each port asks twice)."""
    return frozenset((t.cluster, t.framework, t.strategy, template_model(t)) for t in load_templates() if t.supported)


def model_notes(intent: JobIntent, template: TemplateMeta) -> list[str]:
    """The header's word on a process model the target forces."""
    forced = forced_change(intent, template)
    if forced is None:
        return []
    why = ("Lightning's cluster environments expect the scheduler to start every rank" if intent.framework == "lightning"
           else f"{template.cluster} runs {template.framework} only as {forced} ({template.launcher})")
    return [f"the source starts {process_model(intent)} ({intent.launcher}); {why}, so the port does, one process per "
            "device (so as many per node as the node's devices): the program gets "
            "RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT as before; check it reads nothing else "
            "of its old launcher's (torchrun's LOCAL_WORLD_SIZE, MPI's rank variables)"]


# Variables an MPI-kind launcher or the scheduler sets in each task it starts (Slurm's srun, PALS,
# Hydra, Open MPI, MVAPICH, Flux, jsrun, pbsdsh): a node rank read from one comes from a launch that
# starts every node of the job itself.
_TASK_VARIABLE = re.compile(r"\$\{?(?:SLURM_NODEID|SLURM_PROCID|SLURM_LOCALID|PMI_RANK|PMIX_RANK|PALS_NODEID|PALS_RANKID|"
                            r"OMPI_COMM_WORLD_RANK|OMPI_COMM_WORLD_NODE_RANK|MV2_COMM_WORLD_RANK|FLUX_TASK_RANK|"
                            r"JSM_NAMESPACE_RANK|PBS_VNODENUM|PBS_TASKNUM)\b")
_GIVEN_FROM_OUTSIDE = re.compile(r"\d+|\$\{?[A-Za-z_]\w*\}?")  # a number, or a variable the job is handed
_NODE_RANK = ("node_rank", "machine_rank")  # torchrun's and deepspeed's, accelerate's
_NODE_COUNT = ("nnodes", "num_nodes", "num_machines")


def start_notes(intent: JobIntent, template: TemplateMeta, ranks_per_node: int, nodes: Optional[int]) -> list[str]:
    """The header's word on how the source starts its processes where the port starts them
    otherwise: another count of processes per node, a node that joins a rendezvous of separately
    started nodes, and DeepSpeed's --local_rank argument."""
    return [note for note in (_processes_per_node(intent, ranks_per_node), _separate_nodes(intent, nodes),
                              _local_rank_argument(intent, template)) if note]


def _processes_per_node(intent: JobIntent, ranks_per_node: int) -> Optional[str]:
    """The process model's rule (docs/trace-gate.md): the port starts one process per device; where the
    source starts another count per node, the header says so (the trace gate reads "process(es) per
    node"), and why it matters: fewer than the node's GPUs (each drives several, or leaves some idle),
    or a count the program may fix itself (a shard count, InternEvo's GPU_NUMS)."""
    nodes, processes, devices = intent.nodes, intent.processes(), intent.gpus_per_node
    started = nodes and processes and -(-processes // nodes)  # the first node's, where they do not fill its nodes alike
    if not started or intent.launcher == "python" or started == ranks_per_node:
        return None
    why = (" (torchrun's default: the source gives no --nproc_per_node)"
           if intent.launcher == "torchrun" and "nproc_per_node" not in intent.launcher_options else "")
    if devices and started < devices:
        return (f"the source starts {started} process(es) per node{why} on nodes of {devices} GPUs, so each drives "
                f"several devices (or leaves some idle); the port starts one per device, {ranks_per_node} per node: a "
                "program that uses several GPUs per process (DataParallel, device_map, its own workers) must be "
                "changed for that, or ported with its own launcher line (--entrypoint)")
    return (f"the source starts {started} process(es) per node{why} ({intent.launcher}: {processes} on {nodes} node(s)); "
            f"the port starts one per device of the target's nodes, {ranks_per_node} per node: a program that fixes "
            "its process count (a shard count, GPUs per node in its config or environment) or sizes its work by "
            "it must be changed for that, or ported with its own launcher line (--entrypoint)")


def drives_its_machine(intent: JobIntent) -> bool:
    """One process on a machine of its own (no scheduler, no launcher) written with a framework that
    uses every device it sees (JAX's local devices; a MirroredStrategy's visible GPUs,
    https://www.tensorflow.org/guide/distributed_training, read 2026-11-29): it had the whole machine."""
    return intent.scheduler == "none" and intent.launcher == "python" and \
        (intent.framework == "jax" or intent.strategy == "mirrored")


def device_notes(intent: JobIntent, template: TemplateMeta, devices: int, node_devices: int) -> list[str]:
    """One process that sees fewer than its node's devices (a single-device port on a node it shares):
    said in the header, since a program that uses every device it sees (JAX, DataParallel) gets only
    those; the trace gate reads "devices"."""
    if template.strategy != "single" or devices >= node_devices:
        return []
    given = f"{intent.gpus_per_node} GPU(s)" if intent.gpus_per_node else "no device count"
    return [f"the program runs as one process that sees {devices} of the node's {node_devices} devices (the source "
            f"is read as giving it {given}); a program that uses every device it sees (JAX, DataParallel) uses "
            f"{devices} here, not the whole node"]


def _separate_nodes(intent: JobIntent, nodes: Optional[int]) -> Optional[str]:
    """A per-node launcher told its node's rank from outside the job (`qsub -v NODE_RANK=1`, ssh per
    node, by hand): the source is one node of a rendezvous whose other nodes start separately."""
    options = intent.launcher_options
    option = next((name for name in _NODE_RANK if name in options), None)
    if option is None or intent.launcher not in PER_NODE_LAUNCHERS:
        return None
    rank, count = options[option], next((options[name] for name in _NODE_COUNT if name in options), None)
    if _TASK_VARIABLE.search(rank) or not _GIVEN_FROM_OUTSIDE.fullmatch(rank) or count == "1":
        return None
    size = f"{nodes} node(s)" if nodes else "the allocation's nodes"
    return (f"the source's {intent.launcher} is one node of a rendezvous of {count or 'several'} node(s), told its "
            f"rank from outside the job (--{option}={rank}): its other nodes start separately (another job, ssh, "
            f"or by hand); the port is one job that starts every node itself ({size}): submit it once, not per node")


def _local_rank_argument(intent: JobIntent, template: TemplateMeta) -> Optional[str]:
    """DeepSpeed's launcher passes each worker --local_rank=N unless --no_local_rank; others do not."""
    if intent.launcher != "deepspeed" or template.launcher == "deepspeed" or "no_local_rank" in intent.launcher_options:
        return None
    return (f"the source's deepspeed launcher passes each worker --local_rank=N; the port's {template.launcher} "
            "ranks get LOCAL_RANK in their environment only: a program whose argument parser requires "
            "--local_rank must read LOCAL_RANK instead (deepspeed.init_distributed and HF Trainer do)")


def world_change_notes(intent: JobIntent, profile: ClusterProfile, shape: tuple[int, int]) -> list[str]:
    """Say when ranks per node or the world size change with the target's node shape."""
    nodes, gpus = shape
    unit = "devices" if gpus != profile.gpus_per_node else "GPUs"
    note = _per_node_change(intent, nodes, gpus, unit) if intent.nodes is None else _world_change(intent, nodes, gpus, unit)
    return [note] if note else []


def _per_node_change(intent: JobIntent, nodes: int, gpus: int, unit: str) -> Optional[str]:
    """A size chosen at submit time: the ranks per node change, or a world size the source fixed
    (`#SBATCH -n 2`) does, with the default node count."""
    if intent.processes() and intent.processes() != nodes * gpus:
        return (f"world size changes from {intent.processes()} to {nodes * gpus} ({nodes} node(s) unless chosen at submit "
                f"time x {gpus} {unit}: the target's node shape, one rank per device); check batch size and learning rate")
    if not intent.gpus_per_node or intent.gpus_per_node == gpus:
        return None
    return (f"processes (ranks) per node change from {intent.gpus_per_node} to {gpus} ({unit} per node: the "
            "target's node shape, one rank per device); check batch size and learning rate")


def _world_change(intent: JobIntent, nodes: int, gpus: int, unit: str) -> Optional[str]:
    source_world = intent.processes() or (intent.gpus_per_node and intent.nodes * intent.gpus_per_node)
    if not source_world or source_world == nodes * gpus:
        return None
    return (f"world size changes from {source_world} to {nodes * gpus} ({nodes} nodes x {gpus} {unit}: "
            f"the target's node shape, one rank per device); check batch size and learning rate")
