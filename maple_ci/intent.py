"""JobIntent: what a training job needs, independent of any cluster.

Every agent reads or writes this one format (see DESIGN.md); `maple extract --json` prints it.
"""

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

Scheduler = Literal["slurm", "pbs", "none"]
Framework = Literal["pytorch", "deepspeed", "accelerate", "megatron", "lightning"]
Strategy = Literal["ddp", "fsdp", "zero1", "zero2", "zero3", "3d", "tp", "single"]

# Launchers (JobIntent.launcher values) that start one process per device themselves; the others
# (torchrun, accelerate, deepspeed) run once per node and fork the per-device workers.
PER_DEVICE_LAUNCHERS = frozenset({"srun", "mpiexec", "mpirun", "ibrun", "python"})

# What a port cannot do without. Anything else has a sensible default: no node count means the
# size is chosen at submit time (`sbatch -N 4 job.sh`) and the port takes it from the allocation;
# no GPU count means one rank per device of the target.
REQUIRED_FOR_PORT = ("entrypoint",)


class Container(BaseModel):
    """The container a source runs its program in (Shifter, Apptainer/Singularity, podman-hpc,
    Pyxis/enroot); synthesis maps it to the target's runtime when the image can run there."""

    model_config = ConfigDict(extra="forbid")

    runtime: str  # "shifter" | "apptainer" | "singularity" | "podman-hpc" | "pyxis"
    image: Optional[str] = None  # as written: docker:nersc/pytorch:24.06, /path/img.sif, $SIF
    options: list[str] = Field(default_factory=list)  # the runtime's own flags, verbatim (-B, --nv, --module=gpu)


class JobIntent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source_cluster: Optional[str] = None
    scheduler: Scheduler = "none"
    launcher: str = "python"
    framework: Framework = "pytorch"
    strategy: Optional[Strategy] = None
    nodes: Optional[int] = Field(default=None, ge=1)
    gpus_per_node: Optional[int] = Field(default=None, ge=1)
    world_size: Optional[int] = Field(default=None, ge=1)
    entrypoint: Optional[str] = None
    script_args: list[str] = Field(default_factory=list)
    walltime: Optional[str] = Field(default=None, pattern=r"^\d{1,4}:\d{2}:\d{2}$")
    account: Optional[str] = None
    queue: Optional[str] = None
    modules: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    python_env: Optional[str] = None
    configs: dict[str, str] = Field(default_factory=dict)
    container: Optional[Container] = None
    # A per-rank wrapper kept in front of the program (`srun ./wrap.sh python train.py`, `nsys
    # profile -o x`), words as written; known site affinity wrappers are not kept (the target binds).
    wrapper: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  # what extraction assumed or dropped, for the port's header
    missing: list[str] = Field(default_factory=list)

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

    def with_defaults(self) -> "JobIntent":
        """world_size follows nodes * gpus_per_node unless the script said otherwise."""
        if self.world_size is None and self.nodes and self.gpus_per_node:
            return self.model_copy(update={"world_size": self.nodes * self.gpus_per_node})
        return self
