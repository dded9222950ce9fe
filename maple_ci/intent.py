"""JobIntent: what a training job needs, independent of any cluster.

Every agent reads or writes this one format (see DESIGN.md); `maple extract --json` prints it.
Plain dataclasses checked on construction: extraction runs in every `maple extract`, and a
validation library's import and schema building cost more than the extraction itself.
"""

import re
from dataclasses import dataclass, field, replace
from typing import Literal, Optional, get_args

from . import schedulers
from .launchers import MPI_LAUNCHERS
from .errors import MapleError

Scheduler = str  # "none" or a registered scheduler's name (maple_ci.schedulers.names())
# What the program is written with, named as what it is (issue 25, E). The first five have launch
# templates of their own and run on a center's PyTorch set-up; the others run only where a cluster
# profile lists a set-up for them (`frameworks:`), else in the user's environment (python_env.py).
Framework = Literal["pytorch", "deepspeed", "accelerate", "megatron", "lightning",
                    "jax", "tensorflow", "horovod", "vllm", "ray", "fairseq", "llamafactory",
                    "sglang", "chainer", "mxnet", "paddle"]
TEMPLATE_FRAMEWORKS = ("pytorch", "deepspeed", "accelerate", "megatron", "lightning")
# Programs with a runtime of their own: a center's PyTorch set-up is no help to them. The others
# (Horovod, vLLM, SGLang, Ray, fairseq, LLaMA-Factory) are PyTorch programs that need their own package too.
OWN_RUNTIME = frozenset({"jax", "tensorflow", "chainer", "mxnet", "paddle"})
# Inference servers whose one process forks a GPU worker per tensor/pipeline rank itself (vLLM's and
# SGLang's multiprocessing executors): their tp/pp strategy is one process on the node's GPUs
ENGINES = frozenset({"vllm", "sglang"})
# How the program parallelises (docs/port.md): dp is torch.nn.DataParallel in one process, pp pipeline
# stages (DeepSpeed's, torch.distributed.pipelining's, vLLM's -pp), tp+pp vLLM's both, cp context
# parallelism alone (Megatron's --context-parallel-size, torchtitan's context_parallel_degree); None when unknown.
Strategy = Literal["ddp", "fsdp", "zero1", "zero2", "zero3", "3d", "tp", "single",
                   "mirrored", "multi_worker_mirrored", "dp", "pp", "tp+pp", "cp"]
# TensorFlow's tf.distribute strategies launch as the PyTorch template of the same process model: one
# MirroredStrategy process drives its node's GPUs (a one-process template), a MultiWorkerMirroredStrategy
# job runs one worker per rank the launcher starts (https://www.tensorflow.org/guide/distributed_training, read 2026-11-29)
# torch.nn.DataParallel (dp) is one process on its node's GPUs too (https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html, read 2026-11-29)
TEMPLATE_STRATEGIES = {"mirrored": "single", "multi_worker_mirrored": "ddp", "dp": "single"}

# Launchers (JobIntent.launcher values) that start one process per device themselves (every MPI-kind
# launcher of the registry: srun, mpiexec, ..., flux run); the others (torchrun, accelerate,
# deepspeed) run once per node and fork the per-device workers.
PER_DEVICE_LAUNCHERS = MPI_LAUNCHERS | {"python"}

# What a port cannot do without. Anything else has a sensible default: no node count means the
# size is chosen at submit time (`sbatch -N 4 job.sh`) and the port takes it from the allocation;
# no GPU count means one rank per device of the target.
REQUIRED_FOR_PORT = ("entrypoint",)
WALLTIME = re.compile(r"\d{1,4}:\d{2}:\d{2}")
# The line prefix of a port's record block (verify/record.py): maple's own data in a script, not the source's words.
RECORD_PREFIX = "# maple-record: "


def without_record(script: str) -> str:
    """`script` without its record's lines: what its header says to people (the trace gate takes a
    difference for named when the header's notes name it; the record's variable names must not), and
    what the reader takes for the source's evidence (the record names the port's own cluster)."""
    return "".join(line for line in script.splitlines(keepends=True) if not line.startswith(RECORD_PREFIX.rstrip()))


@dataclass
class Container:
    """The container a source runs its program in (Shifter, Apptainer/Singularity, podman-hpc,
    Pyxis/enroot); synthesis maps it to the target's runtime when the image can run there."""

    runtime: str  # "shifter" | "apptainer" | "singularity" | "podman-hpc" | "enroot" | "pyxis"
    image: Optional[str] = None  # as written: docker:nersc/pytorch:24.06, /path/img.sif, $SIF
    options: list[str] = field(default_factory=list)  # the runtime's own flags, verbatim (-B, --nv, --module=gpu)


@dataclass
class JobIntent:
    source_cluster: Optional[str] = None
    scheduler: Scheduler = "none"
    launcher: str = "python"
    framework: Framework = "pytorch"
    strategy: Optional[Strategy] = None
    nodes: Optional[int] = None  # each count is >= 1 when known
    gpus_per_node: Optional[int] = None
    world_size: Optional[int] = None
    entrypoint: Optional[str] = None
    script_args: list[str] = field(default_factory=list)
    walltime: Optional[str] = None  # HH:MM:SS
    account: Optional[str] = None
    account_given: bool = False  # the user gave it (--account, repo config): theirs on every target
    queue: Optional[str] = None
    constraint: Optional[str] = None  # Slurm node features (-C), as written; kept only on the source's own cluster
    modules: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    python_env: Optional[str] = None
    configs: dict[str, str] = field(default_factory=dict)
    # The per-node launcher's own options (torchrun, deepspeed, accelerate), by the registry's names,
    # each with its last value as written ("" for a flag); launch_options.py carries or names each one.
    launcher_options: dict[str, str] = field(default_factory=dict)
    # What the accelerate config file the launch names sets that the launcher hands its workers
    # (mixed_precision, fsdp_config's fsdp_*...), by the same names: carried where no accelerate launch reads the file.
    config_options: dict[str, str] = field(default_factory=dict)
    container: Optional[Container] = None
    # A per-rank wrapper kept in front of the program (`srun ./wrap.sh python train.py`, `nsys
    # profile -o x`), words as written; known site affinity wrappers are not kept (the target binds).
    wrapper: list[str] = field(default_factory=list)
    # A job array's index set in Slurm's form ("0-11", "1-9:2%4"), carried in the target's form
    # (schedulers/arrays.py); None for a single job.
    array: Optional[str] = None
    # Variables the source's submitter set per submission (`sbatch --export=ALL,A=$i` in a loop): the
    # port stops at once without them (python_env.given_checks), never runs with them empty.
    given_env: list[str] = field(default_factory=list)
    # How the source binds each rank to one device of its node, in its own words (`srun
    # --gpus-per-task=1`, `./set_affinity_gpu_polaris.sh`, `jsrun -g 1`); None where its ranks see
    # the node's devices. The port binds its ranks too, or says it cannot (binding.py).
    device_binding: Optional[str] = None
    # The loops that repeat the launch, each [NAME, value...] outermost first (`for v in a b c`, a counted
    # `for ((...))` or `while read` written out as its values), and the script's arrays its words index
    # with what only the job knows (`${A[$SLURM_ARRAY_TASK_ID]}`): the port writes both around its launch.
    loops: list[list[str]] = field(default_factory=list)
    arrays: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what extraction assumed or dropped, for the port's header
    missing: list[str] = field(default_factory=list)

    def _check_choices(self) -> None:
        known = {"scheduler": ("none", *schedulers.names()), "framework": get_args(Framework), "strategy": get_args(Strategy)}
        for name, values in known.items():
            value = getattr(self, name)
            if value not in values and not (name == "strategy" and value is None):
                raise MapleError(f"unknown {name} {value!r}; known: {', '.join(values)}")

    def __post_init__(self) -> None:
        self._check_choices()
        for name in ("nodes", "gpus_per_node", "world_size"):
            value = getattr(self, name)
            if value is not None and (type(value) is not int or value < 1):
                raise MapleError(f"{name} must be a whole number of at least 1, not {value!r}")
        if self.walltime is not None and not WALLTIME.fullmatch(self.walltime):
            raise MapleError(f"walltime must read HH:MM:SS, not {self.walltime!r}")

    def description(self) -> str:
        """One sentence used as the retrieval query (embedded and compared with templates)."""
        parts = [self.framework]
        if self.strategy:
            parts.append(self.strategy)
        parts.append(f"launched with {self.launcher}")
        if self.nodes:
            parts.append(f"on {self.nodes} nodes")
        if self.gpus_per_node:
            parts.append(f"with {self.gpus_per_node} GPUs per node")
        if self.configs:
            parts.append("configs " + " ".join(sorted(self.configs)))
        return " ".join(parts)

    def template_framework(self) -> str:
        """The template family that launches this program: its own, or plain PyTorch's (a launch
        line starts any program; the set-up is python_env's concern). An Accelerate program that
        python starts alone runs as that one process (`python script.py` without `accelerate
        launch`: huggingface.co/docs/accelerate/basic_tutorials/launch, read 2026-11-29), as the
        one-process template starts it; Accelerate's own templates would start one per device."""
        if self.framework == "accelerate" and self.launcher == "python" and self.template_strategy() == "single":
            return "pytorch"
        return self.framework if self.framework in TEMPLATE_FRAMEWORKS else "pytorch"

    def template_strategy(self) -> Optional[str]:
        """The template strategy that launches this program's strategy (its own word for most); one
        process whose parallelism is its own (a JAX process on its node's devices) takes the
        one-process template, and so does one inference server whose tensor or pipeline parallelism is
        its own (ENGINES)."""
        if (self.world_size == 1 and (self.strategy is None or self.framework in ENGINES)) or self.engine_server():
            return "single"
        return TEMPLATE_STRATEGIES.get(self.strategy, self.strategy)

    def engine_server(self) -> bool:
        """One inference server (ENGINES) on one node, started once: its tensor, pipeline and data
        parallel workers are its own processes, so its world_size counts their devices (tests/data/real's
        labels), not the processes its launch starts. On Ray, Ray places the workers (extract/ray_cluster.py)."""
        return self.framework in ENGINES and self.launcher in PER_DEVICE_LAUNCHERS and (self.nodes or 1) == 1

    def processes(self) -> Optional[int]:
        """The processes the launch starts: one for an engine's server, else one per rank."""
        return 1 if self.engine_server() else self.world_size

    def with_defaults(self) -> "JobIntent":
        """world_size follows nodes * gpus_per_node unless the script said otherwise."""
        if self.world_size is None and self.nodes and self.gpus_per_node:
            return replace(self, world_size=self.nodes * self.gpus_per_node)
        return self
