"""Cluster profiles: facts about one machine, loaded from templates/clusters/<name>.yaml.

Code never branches on a cluster's name; everything that differs between machines is a field here.
"""

import re
from functools import lru_cache
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .errors import MapleError
from .intent import TEMPLATE_FRAMEWORKS
from .library import TemplateRow
from .paths import templates_dir
from .profile_files import files_stamp, profile_files
from . import schedulers
from .schedulers.base import clock_seconds as walltime_seconds  # HH:MM:SS in seconds, one home

WALLTIME_PATTERN = r"^\d{1,4}:\d{2}:\d{2}$"
# The variable that limits which devices a process sees, by vendor: CUDA's (NVIDIA CUDA C
# Programming Guide, "CUDA Environment Variables"), ROCm's runtime (rocm.docs.amd.com, "GPU
# isolation techniques"), Level Zero's (ALCF Aurora docs, running-jobs-aurora: ZE_AFFINITY_MASK
# per tile under ZE_FLAT_DEVICE_HIERARCHY=FLAT). Read 2026-11-25.
VISIBLE_DEVICES = {"nvidia": "CUDA_VISIBLE_DEVICES", "amd": "ROCR_VISIBLE_DEVICES", "intel": "ZE_AFFINITY_MASK"}


class WalltimeBin(BaseModel):
    """A tighter walltime limit for jobs up to `max_nodes` nodes (size-binned queues)."""

    model_config = ConfigDict(extra="forbid")
    max_nodes: int = Field(ge=1)
    max_walltime: str = Field(pattern=WALLTIME_PATTERN)


class Queue(BaseModel):
    """A Slurm partition/QOS or a PBS queue with the limits a job must fit."""

    model_config = ConfigDict(extra="forbid")
    name: str
    max_walltime: str = Field(pattern=WALLTIME_PATTERN)  # the longest any job in this queue may run
    max_nodes: int = Field(ge=1)
    min_nodes: int = Field(default=1, ge=1)
    default: bool = False
    # Jobs here may be killed for others (ALCF `preemptable`): the header says so when a job lands here.
    preemptable: bool = False
    note: str = ""
    # Some queues allow less time to small jobs than to big ones (Frontier `batch`: 1-91 nodes 2 h;
    # ALCF `prod` routing: 10-24 nodes 3 h). Bins sorted by max_nodes; the first bin whose
    # max_nodes >= the job's nodes gives its limit; larger jobs get max_walltime.
    walltime_bins: list[WalltimeBin] = Field(default_factory=list)

    def max_walltime_for(self, nodes: int) -> str:
        """The walltime limit that applies to a job of `nodes` nodes in this queue."""
        for walltime_bin in sorted(self.walltime_bins, key=lambda b: b.max_nodes):
            if nodes <= walltime_bin.max_nodes:
                return walltime_bin.max_walltime
        return self.max_walltime


class FrameworkSetup(BaseModel):
    """Environment set-up for one framework: applied in order module_use, modules, setup, env."""

    model_config = ConfigDict(extra="forbid")
    module_use: list[str] = Field(default_factory=list)
    modules: list[str] = Field(default_factory=list)
    setup: list[str] = Field(default_factory=list)  # shell lines, e.g. "conda activate"
    env: dict[str, str] = Field(default_factory=dict)
    # Set where the center provides no environment with this framework: the job activates the
    # user's own (a conda env or a venv), named at port time (--python-env); without one the job
    # stops before the program could run without torch (python_env.py).
    user_env: Optional[Literal["conda", "venv"]] = None
    user_env_docs: str = ""  # the center's page on building that environment


class ContainerRuntime(BaseModel):
    """How the site runs a container image inside a job. synthesize ports a source's container onto
    it when the image can run here (same cpu_arch and gpu_vendor as the machine it came from)."""

    model_config = ConfigDict(extra="forbid")
    # The runtime batch jobs use; "none" where the site offers none for multi-node GPU jobs. The
    # CSCS Container Engine (srun --environment=<EDF>.toml) and Pyxis (srun --container-image=) are
    # srun options rather than a command before the program (containers.SRUN_OPTION_RUNTIMES).
    runtime: Literal["shifter", "podman-hpc", "apptainer", "singularity", "container-engine", "pyxis", "none"]
    # Shell lines that make the runtime's command exist in a job (module use/load); empty when it is on PATH.
    setup: list[str] = Field(default_factory=list)
    # The words that run a program in an image, before the image: ["apptainer", "exec"], ["shifter"].
    command: list[str] = Field(default_factory=list)
    # What gives the container the node's GPUs (and the network plugin): Apptainer --nv on NVIDIA,
    # --rocm on AMD; Shifter --module=gpu,nccl-plugin; podman-hpc --gpu.
    gpu_flags: list[str] = Field(default_factory=list)
    # Bind mounts for the file systems the runtime does not mount itself (Apptainer mounts $HOME,
    # /tmp and the working directory; Shifter mounts home, scratch and CFS).
    binds: list[str] = Field(default_factory=list)
    # Container Engine only: the EDF's [annotations] (the NCCL/libfabric hook) and mounts.
    annotations: dict[str, str] = Field(default_factory=dict)
    # Profile env settings a container job must not get: they name host software the image lacks
    # (Polaris' NCCL_NET="AWS Libfabric" needs the host's OFI plugin, or NCCL aborts at init).
    drop_env: list[str] = Field(default_factory=list)
    # Images the site lets jobs run, each pinned by digest (name@sha256:...); a source's image runs
    # in a port only when listed here (issue 15 item 3). Empty: the site's framework set-up runs it.
    allowed_images: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)  # the center's pages these facts come from
    unconfirmed: list[str] = Field(default_factory=list)  # which facts above no source we read confirmed


class Network(BaseModel):
    """The network between nodes as the collective library should use it (maple_ci/verify/speed.py
    judges a run by it): the NCCL/RCCL transport and the line rate of the node's NICs."""

    model_config = ConfigDict(extra="forbid")
    transport: Literal["ofi", "ib", "socket"]  # templates/metrics.yaml transports
    fabric: str  # "Slingshot 11", "InfiniBand HDR200"
    nics_per_node: int = Field(ge=1)
    nic_gbps: float = Field(gt=0)  # GB/s per NIC (10^9 bytes): 200 Gb/s is 25
    fix: str  # what makes NCCL use the transport, said to a run that fell back to sockets
    source: str = Field(pattern=r"^https://")  # where the NIC count and rate are stated
    read: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")  # when that page was read
    unconfirmed: list[str] = Field(default_factory=list)  # which facts above no source we read confirmed


class ClusterProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    display_name: str
    center: str
    docs_url: str = Field(pattern=r"^https://")
    sources: list[str] = Field(default_factory=list)  # further pages the facts come from
    scheduler: str  # a registered scheduler (maple_ci/schedulers)
    # What a container image must be built for to run here (an x86 CUDA image needs x86_64 + nvidia).
    cpu_arch: Literal["x86_64", "aarch64"]
    gpu_vendor: Literal["nvidia", "amd", "intel"]
    gpu_model: str
    gpus_per_node: int = Field(ge=1)  # physical GPUs (packages)
    devices_per_node: int = Field(ge=1)  # what ranks bind to: Aurora 12 tiles, Frontier 8 GCDs
    gpu_memory_gb: int = Field(ge=1)  # per device
    cores_per_node: int = Field(ge=1)
    # What the scheduler counts as CPUs on a node when that is not the cores: Slurm on Perlmutter
    # counts 128 hardware threads for 64 cores, so --cpus-per-task is in threads there.
    scheduler_cpus_per_node: Optional[int] = Field(default=None, ge=1)
    device: Literal["cuda", "xpu"]  # torch device type (ROCm builds also say "cuda")
    backend: str  # torch.distributed backend: nccl (also RCCL), xccl, ccl
    queues: list[Queue] = Field(min_length=1)
    queue_directive: Literal["partition", "qos", "queue"]  # how a queue is chosen: -p, -q (QOS), PBS -q
    account_required: bool
    account_example: str  # the shape of an account name, shown when it is missing
    # What every account name ends with here, given or not (IDRIS: the hour pool, `-A abc@h100` on the
    # H100 partition, `@a100` on the A100 one; another pool's hours do not run there): account_for().
    account_suffix: str = Field(default="", pattern=r"^(@[a-z0-9]+)?$")
    # The CPUs a GPU job must ask per GPU where the site enforces a ratio (NCI gpuvolta: ncpus = 12 x
    # ngpus; MareNostrum 5: "Number of GPUs * 20"); a port gives each GPU's rank that share. None where
    # the site leaves it to the job.
    cpus_per_gpu: Optional[int] = Field(default=None, ge=1)
    directives: list[str] = Field(default_factory=list)  # always present, e.g. "--constraint=gpu", "-l filesystems=home:eagle"
    # How to ask for GPUs, one directive written as after "#SBATCH ". Placeholders: {gpus} = GPUs
    # per node, {total_gpus} = GPUs in the whole job (Bridges-2 "--gpus=v100-32:{total_gpus}").
    # None when GPUs come with the node (TACC queues, Frontier, PBS sites).
    gpu_request: Optional[str] = None
    # PBS only: appended to the node chunk the template builds, "-l select=N" + select_extra
    # (Polaris ":system=polaris"). Empty where plain "select=N" is right.
    select_extra: str = ""
    rejected_directives: list[str] = Field(default_factory=list)  # the site refuses jobs that use these
    # Shell lines the batch script runs first, before any module command (Sophia's bash jobs must
    # source /etc/profile for `module` to exist).
    prologue: list[str] = Field(default_factory=list)
    default_launcher: str
    master_port: int = 29500
    # The rendezvous host where the site's docs compute it otherwise than the scheduler base does
    # (first host of the allocation): the shell text after `MASTER_ADDR=` (JSC: the first node's
    # InfiniBand name, its hostname with "i" appended). Rendered as written, in every launch shape.
    master_addr: Optional[str] = None
    # torchrun's c10d store is hosted by the node of index 0, named with --rdzv_conf=is_host: torch
    # decides who hosts it by matching the endpoint against gethostname() and its addresses
    # (c10d_rendezvous_backend._create_tcp_store), which a master_addr like JSC's "<host>i" never
    # matches, so no node would host it and the rendezvous times out.
    rdzv_host_by_node_rank: bool = False
    # Options the site's own torchrun recipe passes (LUMI AI guide: --numa-binding=exclusive), given
    # where the site's framework set-up runs torchrun; a source's own image may hold an older torch.
    torchrun_options: list[str] = Field(default_factory=list)
    # The cores the launch line binds each rank to, where that is fewer than the node's cores over
    # its ranks (Aurora: ALCF's list gives each of 12 ranks 4 cores); threads per rank follow it.
    cores_per_rank: Optional[int] = Field(default=None, ge=1)
    frameworks: dict[str, FrameworkSetup]  # keyed by framework name; "pytorch" is the fallback
    # Network/collective settings for every job. Values are literal strings (no $VAR expansion);
    # anything that must expand (LD_LIBRARY_PATH prepends) belongs in a FrameworkSetup.setup line.
    env: dict[str, str] = Field(default_factory=dict)
    # The device order that puts local rank i's GPU on the NUMA domain of the cores a launcher binds
    # rank i to, where the board numbers them the other way (Polaris, Delta A100: GPU0 sits on the
    # last cores); exported as the visibility variable when the job holds every device of the node.
    device_order: Optional[str] = Field(default=None, pattern=r"^\d+(,\d+)*$")
    # The options with which the site's per-device launch (its launch template) binds each rank to one
    # device, where it does (Frontier's srun, Flux's per-task affinity); None: its ranks see the
    # node's devices unless the source bound them, and then the port binds them (binding.py).
    rank_binding: Optional[str] = None
    container: ContainerRuntime
    # None where no NCCL/RCCL network applies or none is cited (Aurora's collectives are oneCCL's).
    network: Optional[Network] = None
    # Regexes that mark a script as written for this cluster. extract searches them with re.I and
    # picks the profile with the most hits; use (?-i:...) where case matters (Bridges-2 "GPU").
    signatures: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    # The cluster's one launch template file under templates/launch/, where the scheduler's base
    # ("_<scheduler>.sh.j2") cannot render it as it is (library.py); its variants are the rows.
    launch_template: Optional[str] = Field(default=None, pattern=r"^_?[a-z0-9][a-z0-9_.-]*\.sh\.j2$")
    templates: list[TemplateRow] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ratio_fills_the_node(self) -> "ClusterProfile":
        """A port gives a rank per GPU the node's CPUs over its GPUs (synthesize): an enforced ratio
        must be that share, or the ports would ask what the site refuses."""
        if self.cpus_per_gpu and self.cpus_per_gpu * self.gpus_per_node != self.cpus_per_node:
            raise ValueError(f"cpus_per_gpu {self.cpus_per_gpu} x {self.gpus_per_node} GPUs is not the node's "
                             f"{self.cpus_per_node} CPUs")
        return self

    @field_validator("scheduler")
    @classmethod
    def _registered(cls, name: str) -> str:
        schedulers.get(name)  # names the known ones when it is not
        return name

    @property
    def script_suffix(self) -> str:
        return schedulers.get(self.scheduler).script_suffix

    @property
    def cpus_per_node(self) -> int:
        """The node's CPUs as the scheduler counts them (for --cpus-per-task)."""
        return self.scheduler_cpus_per_node or self.cores_per_node

    @property
    def visible_devices(self) -> str:
        return VISIBLE_DEVICES[self.gpu_vendor]

    def account_for(self, account: str) -> str:
        """The account as the site charges it: with the site's suffix, in place of another one."""
        return account.partition("@")[0] + self.account_suffix if self.account_suffix else account

    def setup_for(self, framework: str) -> FrameworkSetup:
        return self.frameworks.get(framework) or self.frameworks["pytorch"]

    def provides(self, framework: str) -> bool:
        """Whether the center's set-up runs `framework`: PyTorch's family runs on its PyTorch set-up
        (or the user's: python_env.py); any other framework only where the profile lists one for it."""
        return framework in TEMPLATE_FRAMEWORKS or framework in self.frameworks

    def default_queue(self) -> Queue:
        return next((q for q in self.queues if q.default), self.queues[0])


def pick_queue(profile: ClusterProfile, nodes: int, walltime: Optional[str], requested: Optional[str] = None) -> Queue:
    """The requested queue if the cluster has it, else the default queue when the job fits it,
    else the first queue whose limits fit. Falls back to the default so policy checks can say why."""
    by_name = {q.name: q for q in profile.queues}
    if requested in by_name:
        return by_name[requested]
    seconds = walltime_seconds(walltime) if walltime else 0

    def fits(queue: Queue) -> bool:
        return queue.min_nodes <= nodes <= queue.max_nodes and seconds <= walltime_seconds(queue.max_walltime_for(nodes))

    default = profile.default_queue()
    if fits(default):
        return default
    return next((q for q in profile.queues if fits(q)), default)


@lru_cache(maxsize=4)
def _load_all(directory: str, stamp: tuple) -> dict[str, ClusterProfile]:  # stamp: the cache key only
    profiles = {}
    for path, data in profile_files(directory).items():
        try:
            profile = ClusterProfile.model_validate(data)
        except Exception as exc:  # a broken data file must name itself
            raise MapleError(f"invalid cluster profile {path}: {exc}") from exc
        if profile.name in profiles:  # a user's profile (MAPLE_CLUSTERS_DIR) never silently replaces one
            raise MapleError(f"cluster {profile.name!r} is defined twice; rename the one in {path}")
        profiles[profile.name] = profile
    return profiles


def load_profiles() -> dict[str, ClusterProfile]:
    directory = str(templates_dir())
    return _load_all(directory, files_stamp(directory))


def get_profile(name: str) -> ClusterProfile:
    profiles = load_profiles()
    key = name.strip().lower()
    if key not in profiles:
        raise MapleError(f"unknown cluster {name!r}; known clusters: {', '.join(sorted(profiles))}")
    return profiles[key]


def _unconfirmed(profile: ClusterProfile) -> int:
    """How many of the profile's values say they are unconfirmed (`# unconfirmed` in its file, and
    the container's list)."""
    path = next(p for p, data in profile_files(str(templates_dir())).items() if data.get("name") == profile.name)
    text = path.read_text()
    return len(re.findall(r"#\s*unconfirmed", text)) + len(profile.container.unconfirmed)


def clusters_markdown() -> str:
    """The table of supported machines, one row per profile: docs/machines.md shows it, written at
    each build of the site (docs/hooks.py)."""
    rows = ["| Cluster | Center | Scheduler | GPUs per node | Templates | Values marked unconfirmed |",
            "|---|---|---|---|---|---|"]
    for p in load_profiles().values():
        devices = "" if p.devices_per_node == p.gpus_per_node else f" ({p.devices_per_node} devices)"
        rows.append(f"| [{p.display_name}]({p.docs_url}) (`{p.name}`) | {p.center} | {p.scheduler} | "
                    f"{p.gpus_per_node} x {p.gpu_model}{devices} | {len(p.templates)} | {_unconfirmed(p) or 'none'} |")
    return "\n".join(rows) + "\n"
