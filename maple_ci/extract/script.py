"""From the launch the walk found to a JobIntent: node and device counts, framework, strategy,
config files, and what the port must know about (placeholders, sizes chosen at submit time)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import yaml

from ..errors import MapleError
from ..intent import REQUIRED_FOR_PORT, JobIntent
from ..profiles import load_profiles
from .directives import Directives, count, parse_directives, per_node, runtime_vars
from .launch import DL_LAUNCHERS, MPI_LAUNCHERS, Launch, best
from .options import last
from .shell import bash_syntax_error, parse
from .walk import Shell, runtime_values

# Variables every target recomputes for itself; copying them across clusters would be wrong.
RENDEZVOUS_VARS = frozenset(
    {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK",
     "MASTER_ADDR", "MASTER_PORT"}
)
# A script that reads the allocation's size is sized when it is submitted (`sbatch -N 4 job.sh`).
_READS_SIZE = re.compile(r"\$\{?(?:SLURM_NNODES|SLURM_JOB_NUM_NODES|SLURM_JOB_NODELIST|SLURM_NODELIST|"
                         r"SLURM_NTASKS|SLURM_NPROCS|PBS_NODEFILE)\b")


def _option_in_args(args: list[str], *names: str) -> Optional[str]:
    """Value of --name / --name=value among program arguments ('' for a flag without value)."""
    spellings = {f"--{n}" for n in names} | {f"--{n.replace('_', '-')}" for n in names}
    for i, arg in enumerate(args):
        option, eq, value = arg.partition("=")
        if option in spellings:
            if eq:
                return value
            following = args[i + 1] if i + 1 < len(args) else ""
            return "" if following.startswith("-") else following
    return None


def _read_config(path: Optional[str], shell: Shell) -> Optional[dict]:
    """A JSON or YAML config the script names, read inside the checkout; None when it cannot be
    (never fatal: the script may not even use it)."""
    text = shell.read(path) if path else None
    if text is None:
        return None
    try:
        data = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _zero_from(value) -> Optional[str]:
    stage = str(value).strip()
    return f"zero{stage}" if stage in ("1", "2", "3") else None


def _strategy_word(value: Optional[str]) -> Optional[str]:
    """A strategy named in an argument value: fsdp, deepspeed_stage_3, zero2, ddp..."""
    if not value:
        return None
    lowered = value.lower()
    if "fsdp" in lowered or "full_shard" in lowered or "shard_grad_op" in lowered:
        return "fsdp"
    if match := re.search(r"(?:stage|zero)[_-]?([123])", lowered):
        return f"zero{match.group(1)}"
    if "ddp" in lowered:
        return "ddp"
    return None


@dataclass
class _Counts:
    nodes: Optional[int] = None
    per_node: Optional[int] = None  # processes per node that each drive a device
    world: Optional[int] = None


def _launch_counts(launch: Launch, d: Directives, acc_cfg: Optional[dict]) -> _Counts:
    def value(opts: dict, name: str) -> Optional[str]:
        return launch.shell.resolve(last(opts, name))

    counts = _Counts()
    outer = next(((n, o) for n, o in launch.stages if n in MPI_LAUNCHERS), None)
    inner = next(((n, o) for n, o in reversed(launch.stages) if n in DL_LAUNCHERS), None)
    outer_nodes = outer_tasks = outer_ppn = None
    if outer and outer[0] == "srun":
        opts = outer[1]
        outer_nodes = count(value(opts, "nodes"))
        outer_ppn = count(value(opts, "ntasks_per_node"))
        outer_tasks = count(value(opts, "ntasks"))
        step_nodes = outer_nodes or d.nodes
        if outer_tasks is None and "ntasks" not in opts:
            # without -n the step takes the allocation's layout: --ntasks-per-node, else -n, else one per node
            outer_ppn = outer_ppn or (d.ntasks_per_node if "ntasks_per_node" not in opts else None)
            if outer_ppn and step_nodes:
                outer_tasks = outer_ppn * step_nodes
            elif d.ntasks and not outer_nodes:
                outer_tasks = d.ntasks
            elif not d.spreads and "ntasks_per_node" not in opts:
                outer_tasks = step_nodes
    elif outer:
        opts = outer[1]
        outer_tasks = count(value(opts, "np"))
        outer_ppn = count(value(opts, "ppn"))
        if ppr := re.fullmatch(r"ppr:(\d+):node\b.*", value(opts, "map_by") or ""):
            outer_ppn = int(ppr.group(1))
        if outer_tasks is None and outer[0] == "ibrun":
            outer_tasks = d.tasks()  # ibrun starts the allocation's tasks by default
    if outer and outer_ppn is None and outer_tasks and (outer_nodes or d.nodes):
        outer_ppn = per_node(outer_tasks, outer_nodes or d.nodes)
    if outer and outer_nodes is None and outer_tasks and outer_ppn:
        outer_nodes = per_node(outer_tasks, outer_ppn)

    if inner is None:
        if outer and launch.entry and "python" in {n for n, _ in launch.stages}:
            counts.nodes, counts.per_node, counts.world = outer_nodes, outer_ppn, outer_tasks
        elif outer:  # a wrapper script: only the node count is known
            counts.nodes = outer_nodes
        elif launch.entry:  # plain python: one process, on one device
            counts.nodes, counts.per_node, counts.world = 1, 1, 1
        return counts

    name, opts = inner
    if name == "torchrun":
        nnodes = value(opts, "nnodes")
        if "nnodes" in opts:
            counts.nodes = count(nnodes.split(":")[0]) if nnodes and (
                ":" not in nnodes or len(set(nnodes.split(":"))) == 1) else None
        else:
            counts.nodes = 1  # torchrun's default
        counts.per_node = count(value(opts, "nproc_per_node"))
    elif name == "deepspeed":
        if "num_nodes" in opts:
            counts.nodes = count(value(opts, "num_nodes"))
        elif "hostfile" not in opts and not outer:
            counts.nodes = 1  # no hostfile: DeepSpeed runs on localhost
        counts.per_node = count(value(opts, "num_gpus"))
    else:  # accelerate
        cfg = acc_cfg or {}
        machines = value(opts, "num_machines")  # a flag given but unknown here stays unknown
        if "num_machines" not in opts and cfg.get("num_machines") is not None:
            machines = str(cfg["num_machines"])
        elif machines is None and "config_file" not in opts:
            machines = "1"  # accelerate's default without a config file
        processes = value(opts, "num_processes")
        if "num_processes" not in opts and cfg.get("num_processes") is not None:
            processes = str(cfg["num_processes"])
        counts.nodes = count(machines)
        counts.world = count(processes)
        counts.per_node = per_node(counts.world, counts.nodes)
    counts.nodes = counts.nodes or outer_nodes
    return counts


_MEGATRON_ENTRY = re.compile(r"(?i)(?:.*/)?(?:pretrain_(?:gpt|bert|t5|mamba|retro|ict|vlm|vision|llama|mixtral|mistral)\w*\.py"
                             r"|.*megatron.*)")
_LIGHTNING = re.compile(r"^\s*(?:import|from)\s+(?:lightning|pytorch_lightning|nemo)\b", re.M)
_FSDP = re.compile(r"(?i)\bfsdp\b|fully_shard|full_shard|shard_grad_op|hybrid_shard|FullyShardedDataParallel|"
                   r"data_parallel_shard_degree")
_TP_PP = ("tensor-model-parallel-size", "pipeline-model-parallel-size")


def _parallel_sizes(args: list[str], resolve) -> list[Optional[int]]:
    """Megatron's tensor and pipeline sizes as flags or as NeMo's Hydra overrides; 1 when not given."""
    sizes = []
    for flag in _TP_PP:
        value = _option_in_args(args, flag)
        if value is None:
            hydra = flag.replace("-size", "_size").replace("-", "_")
            value = next((a.split("=", 1)[1] for a in args if re.fullmatch(rf"[\w.+]*{hydra}=\S+", a)), None)
        sizes.append(1 if value is None else count(resolve(value)))
    return sizes


# Model-parallel degrees as config files write them: nanotron's `tp: 2`, torchtitan's
# `tensor_parallel_degree = 2`, DeepSpeed/HF `tensor_parallel_size: 2`.
_CONFIG_DEGREE = {kind: re.compile(rf"(?m)^\s*(?:{short}|{long}_parallel_(?:size|degree))\s*[:=]\s*(\d+)\b")
                  for kind, short, long in (("tp", "tp", "tensor"), ("pp", "pp", "pipeline"))}


def _config_parallel(program: str) -> tuple[int, int]:
    """(tensor, pipeline) degrees the program's config files set; 1 where they set none."""
    found = [_CONFIG_DEGREE[kind].search(program) for kind in ("tp", "pp")]
    return tuple(int(match.group(1)) if match else 1 for match in found)


def _program_text(launch: Launch, shell: Shell) -> str:
    """What the program and the config files its arguments name say, when they are in the checkout:
    `import lightning`, FSDP settings. Read as text only, inside the checkout, never run."""
    named = [launch.entry or ""] + [a.split("=", 1)[-1] for a in launch.args]
    texts = [shell.read(path) for path in named if re.search(r"\.(?:py|ya?ml|json|toml)$", path)]
    return "\n".join([" ".join(launch.args), *(text for text in texts if text)])


def _framework(launch: Optional[Launch], deepspeed_config: Optional[str], program: str) -> str:
    if launch is None:
        return "pytorch"
    names = launch.names()
    args = launch.args
    if "accelerate" in names:
        return "accelerate"
    if _MEGATRON_ENTRY.fullmatch(launch.entry or "") or any(
            size is None or size > 1 for size in _parallel_sizes(args, launch.shell.resolve)):
        return "megatron"  # Megatron-DeepSpeed too: its DeepSpeed flags serve Megatron's program
    if "deepspeed" in names or deepspeed_config or _option_in_args(args, "deepspeed") is not None:
        return "deepspeed"
    if ("lightning" in (launch.entry or "").lower() or any(a.startswith(("--trainer.", "trainer.")) for a in args)
            or _LIGHTNING.search(program)):
        return "lightning"
    return "pytorch"


def _deepspeed_config(launch: Launch) -> Optional[str]:
    for name, opts in launch.stages:
        if name == "accelerate" and last(opts, "deepspeed_config_file"):
            return last(opts, "deepspeed_config_file")
    named = _option_in_args(launch.args, "deepspeed_config", "deepspeed_config_file")
    if named:
        return named
    value = _option_in_args(launch.args, "deepspeed")  # Hugging Face Trainer: --deepspeed ds.json
    return value if value and re.search(r"\.(json|ya?ml)$", value) else None


def _strategy(launch: Optional[Launch], world: Optional[int], ds_path: Optional[str],
              ds_cfg: Optional[dict], acc_path: Optional[str], acc_cfg: Optional[dict], program: str) -> Optional[str]:
    if launch is None:
        return None
    resolve = launch.shell.resolve
    args = launch.args
    sizes = _parallel_sizes(args, resolve)
    if None in sizes:
        return None  # model-parallel sizes only known at run time
    if sizes == [1, 1]:
        sizes = list(_config_parallel(program))
    if sizes[1] > 1:
        return "3d"
    if sizes[0] > 1:
        return "tp"
    acc = next((o for n, o in launch.stages if n == "accelerate"), None)
    if acc is not None:
        if "use_fsdp" in acc or any(k.startswith("fsdp_") for k in acc):
            return "fsdp"
        if "zero_stage" in acc:
            return _zero_from(resolve(last(acc, "zero_stage")))
        if acc_cfg:
            kind = str(acc_cfg.get("distributed_type", "")).upper()
            if kind == "FSDP":
                return "fsdp"
            if kind == "DEEPSPEED":
                ds_section = acc_cfg.get("deepspeed_config") or {}
                if ds_section.get("zero_stage") is not None:
                    return _zero_from(ds_section["zero_stage"])
        elif acc_path:
            return None  # the config decides and we cannot read it
    fsdp = _option_in_args(args, "fsdp")
    if fsdp is not None:
        return "fsdp"
    for name in ("zero_stage", "zero-stage", "zero"):
        if (stage := _option_in_args(args, name)) is not None:
            return _zero_from(resolve(stage))
    if named := _strategy_word(resolve(_option_in_args(args, "strategy", "trainer.strategy"))):
        return named
    if ds_cfg is not None:
        zero = _zero_from((ds_cfg.get("zero_optimization") or {}).get("stage", 0))
        if zero:
            return zero
    elif ds_path:
        return _strategy_word(Path(ds_path).stem)  # unreadable: only its name can say, else unknown
    if _FSDP.search(program):
        return "fsdp"
    if acc is not None and not acc_path and not {"multi_gpu", "num_processes", "num_machines"} & set(acc):
        return None  # `accelerate launch` alone: the user's default accelerate config decides
    if world is None:  # a size chosen at run time: data parallel when the launch is parallel at all
        return "ddp" if launch.names() & (MPI_LAUNCHERS | DL_LAUNCHERS) else None
    return "single" if world == 1 else "ddp"


def _source_cluster(text: str) -> Optional[str]:
    """The profile whose signatures match the script most; None when none match or two tie."""
    scores = {}
    for name, profile in load_profiles().items():
        hits = sum(1 for pattern in profile.signatures if re.search(pattern, text, re.I))  # see ClusterProfile
        if hits:
            scores[name] = hits
    if not scores:
        return None
    ranked = sorted(scores.items(), key=lambda item: -item[1])
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def _with_missing(intent: JobIntent) -> JobIntent:
    intent = intent.with_defaults()
    missing = [name for name in REQUIRED_FOR_PORT if getattr(intent, name) is None]
    return intent.model_copy(update={"missing": missing})


def extract_script(text: str, base_dir: Optional[str | Path] = None, name: str = "script",
                   root: Optional[str | Path] = None) -> JobIntent:
    """JobIntent of a batch or launch script. `name` labels errors; files the script names
    (wrappers, configs, env files) are read only inside `root`, the checkout (default: `base_dir`,
    the script's folder; nothing is read when both are None), looked up from `base_dir` first."""
    text = text.replace("\r\n", "\n")
    try:
        problem = bash_syntax_error(text)
        if problem:
            raise MapleError(f"{problem}; fix the shell syntax there")
        base = Path(base_dir) if base_dir is not None else None
        return _extract_script(text, base, Path(root) if root is not None else base)
    except MapleError as exc:
        raise MapleError(f"{name}: {exc}", exc.exit_code) from exc


def _extract_script(text: str, base_dir: Optional[Path], root: Optional[Path]) -> JobIntent:
    d = parse_directives(text)
    notes = list(d.notes)
    if d.nodes is None and not d.nodes_given and not d.spreads and d.scheduler != "none":
        if _READS_SIZE.search(text):
            notes.append("the node count is chosen at submit time; the port takes it from the allocation")
        else:
            d.nodes = 1  # what sbatch and qsub allocate when nothing asks for more
    shell = Shell(root, base_dir, runtime_values(d.nodes, runtime_vars(d)), arguments_known=False)
    shell.run(parse(text))
    launch = best(shell.launches)

    scheduler = d.scheduler
    if scheduler == "none":
        if re.search(r"\$\{?SLURM_", text) or (launch and launch.stages and launch.stages[0][0] == "srun"):
            scheduler = "slurm"
        elif re.search(r"\$\{?PBS_", text):
            scheduler = "pbs"

    configs: dict[str, str] = {}
    ds_path = _deepspeed_config(launch) if launch else None
    acc = next((o for n, o in launch.stages if n == "accelerate"), None) if launch else None
    acc_path = last(acc, "config_file") if acc else None
    if ds_path:
        configs["deepspeed"] = ds_path
    if acc_path:
        configs["accelerate"] = acc_path
    acc_cfg = _read_config(acc_path, shell)
    ds_cfg = _read_config(ds_path, shell)
    if ds_cfg is None and acc_cfg and (acc_cfg.get("deepspeed_config") or {}).get("deepspeed_config_file"):
        ds_path = str(acc_cfg["deepspeed_config"]["deepspeed_config_file"])
        ds_cfg = _read_config(ds_path, shell)

    program = _program_text(launch, shell) if launch else ""
    if launch and not launch.names() & (MPI_LAUNCHERS | DL_LAUNCHERS) and d.nodes is None and not d.nodes_given:
        d.nodes = 1  # one process: whatever the allocation, the program runs on one node
        notes = [n for n in notes if not n.startswith("the node count is chosen at submit time")]
    counts = _launch_counts(launch, d, acc_cfg) if launch else _Counts()
    nodes = d.nodes if d.nodes_given and d.nodes else counts.nodes or d.nodes
    gpus_per_node = d.gpus_per_node or counts.per_node
    world = counts.world
    if world is None and counts.per_node and (counts.nodes or nodes) and launch and launch.names() & DL_LAUNCHERS:
        world = counts.per_node * (counts.nodes or nodes)

    env = {key: value for key, value in {**shell.env, **(launch.env if launch else {})}.items()
           if key not in RENDEZVOUS_VARS and isinstance(value, str)}
    if launch:
        notes += [note for note in launch.notes if note not in notes]
    notes += _not_carried(d, shell, launch)
    notes += [note for note in shell.notes if note not in notes]
    intent = JobIntent(
        source_cluster=_source_cluster(text),
        scheduler=scheduler,
        launcher=_launcher(launch),
        framework=_framework(launch, ds_path, program),
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        world_size=world,
        entrypoint=launch.entry if launch else None,
        script_args=list(launch.args) if launch else [],
        walltime=d.walltime,
        account=d.account,
        queue=d.queue,
        modules=shell.modules,
        env=env,
        python_env=shell.python_env,
        configs=configs,
        container=_container(launch, d),
        wrapper=launch.wrapper if launch else [],
        notes=notes,
    ).with_defaults()
    strategy = _strategy(launch, intent.world_size, ds_path, ds_cfg, acc_path, acc_cfg, program)
    return _with_missing(intent.model_copy(update={"strategy": strategy}))


_LOGGING = re.compile(r"echo|printf|date|hostname|\w+-smi|env|printenv|sleep|set|ulimit|which|pwd|ls|cat|df|free|"
                      r"uname|lscpu|nproc|module|conda|pip\d?|python[\d.]*|true|:|wait|sync|time")


def _not_carried(d: Directives, shell: Shell, launch: Optional[Launch]) -> list[str]:
    """Notes naming what the port does not carry: the source's directives it does not translate and
    its commands besides the set-up and the launch (a port runs only its own; the user's may be
    needed: data staging, a requeue trap, a `cd`)."""
    notes = []
    if d.dropped:
        notes.append(f"directives not carried over: {', '.join(d.dropped)}")
    kept, logging = [], {}
    for line, words, found in shell.commands:
        if found is launch:
            continue
        head = words[0].rsplit("/", 1)[-1] if words else ""
        if _LOGGING.fullmatch(head) and not (found and found.score):
            logging[head] = logging.get(head, 0) + 1
        else:
            kept.append(f"`{' '.join(words)[:80]}` (line {line})")
    if kept or logging:
        shown = kept[:6] + ([f"{len(kept) - 6} more"] if len(kept) > 6 else [])
        logged = ", ".join(f"{head} x{count}" if count > 1 else head for head, count in logging.items())
        notes.append("commands not carried over (the port runs its own set-up and the launch): "
                     + "; ".join(shown + ([f"logging lines ({logged})"] if logged else [])))
    return notes


def _container(launch: Optional[Launch], d: Directives):
    """The launch's container; Shifter may take its image from the directives instead of the line."""
    if launch is None or launch.container is None:
        return None
    if launch.container.image is None and launch.container.runtime == "shifter" and d.image:
        return launch.container.model_copy(update={"image": d.image})
    return launch.container


def _launcher(launch: Optional[Launch]) -> str:
    """The program that starts the per-GPU workers (DESIGN.md)."""
    if launch is None:
        return "python"
    names = [n for n, _ in launch.stages]
    inner = [n for n in names if n in DL_LAUNCHERS]
    if inner:
        return inner[-1]
    outer = [n for n in names if n in MPI_LAUNCHERS]
    return outer[0] if outer else "python"

