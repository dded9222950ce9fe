"""From the launch the walk found to a JobIntent: node and device counts (framework and strategy
are `kind`'s), and what the port must know about (placeholders, sizes chosen at submit time, what
it does not carry)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from ..errors import MapleError
from ..intent import REQUIRED_FOR_PORT, JobIntent
from ..launchers import DL_LAUNCHERS, MPI_LAUNCHERS, launcher
from ..profile_files import cluster_data
from . import kind
from .. import schedulers
from .directives import Directives, count, parse_directives, per_node, runtime_vars
from .evaluate import PASS_THROUGH
from .launch import Launch, best
from .options import last
from .shell import bash_syntax_error, parse
from .submit import submitted
from .walk import Shell, runtime_values

# Variables every target recomputes for itself; copying them across clusters would be wrong.
RENDEZVOUS_VARS = frozenset(
    {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK",
     "MASTER_ADDR", "MASTER_PORT"}
)
# A script that reads the allocation's size is sized when it is submitted (`sbatch -N 4 job.sh`).
_READS_SIZE = re.compile(r"\$\{?(?:SLURM_NNODES|SLURM_JOB_NUM_NODES|SLURM_JOB_NODELIST|SLURM_NODELIST|"
                         r"SLURM_NTASKS|SLURM_NPROCS|PBS_NODEFILE)\b")

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
        opts, grammar = outer[1], launcher(outer[0])
        outer_tasks = grammar.count("world", lambda name: count(value(opts, name)))
        outer_ppn = grammar.count("per_node", lambda name: count(value(opts, name)))
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


_BLANK_LINES = re.compile(r"\n[ \t\r\n]*\n")


def _source_cluster(text: str) -> Optional[str]:
    """The profile whose signatures match the script most; None when none match or two tie."""
    scores = {}
    text = _BLANK_LINES.sub("\n", text)  # a signature's `^\s*` runs over blank lines from every line start
    for name, profile in cluster_data().items():
        hits = sum(1 for pattern in profile.get("signatures", ()) if re.search(pattern, text, re.I))  # see ClusterProfile
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
    return replace(intent, missing=missing)


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
        try:
            return _extract_script(text, base, Path(root) if root is not None else base, follow_submit=True)
        except RecursionError:  # ( ( ( ... ), ${a:-${a:-...}} thousands deep: bounded, like the budget
            raise MapleError("the script nests subshells, groups or expansions deeper than extraction follows; "
                             "extraction stopped") from None
    except MapleError as exc:
        raise MapleError(f"{name}: {exc}", exc.exit_code) from exc


def _extract_script(text: str, base_dir: Optional[Path], root: Optional[Path], follow_submit: bool = False) -> JobIntent:
    d = parse_directives(text)
    notes = list(d.notes)
    if d.nodes is None and not d.nodes_given and not d.spreads and d.scheduler != "none":
        if _READS_SIZE.search(text):
            notes.append("the node count is chosen at submit time; the port takes it from the allocation")
        else:
            d.nodes = 1  # what sbatch and qsub allocate when nothing asks for more
    unit = schedulers.find(d.scheduler)  # a job with a host file (PBS_NODEFILE) has one line per rank slot
    slots = d.ntasks_per_node if unit and "node_file" in unit.job_vars else None
    shell = Shell(root, base_dir, runtime_values(d.nodes, runtime_vars(d), slots), arguments_known=False)
    shell.run(parse(text, shell.budget))
    launch = best(shell.launches)
    if launch is None and follow_submit and (job := submitted(shell.submits, shell.read)):
        # the job runs where it was submitted: the submitted script's paths are read from here
        intent = _extract_script(job.text, base_dir, root)
        note = (f"this script submits {job.path} (`{job.line[:120]}`): the port is of {job.path} with the "
                "submit line's options and arguments written in; submit the port in place of both")
        return replace(intent, notes=[note, *intent.notes])

    scheduler = d.scheduler
    if scheduler == "none":
        implied = schedulers.implied(text, launch.stages[0][0] if launch and launch.stages else None)
        scheduler = implied.name if implied else "none"

    configs: dict[str, str] = {}
    ds_path = kind.deepspeed_config(launch) if launch else None
    acc = next((o for n, o in launch.stages if n == "accelerate"), None) if launch else None
    acc_path = last(acc, "config_file") if acc else None
    if ds_path:
        configs["deepspeed"] = ds_path
    if acc_path:
        configs["accelerate"] = acc_path
    acc_cfg = kind.read_config(acc_path, shell)
    ds_cfg = kind.read_config(ds_path, shell)
    if ds_cfg is None and acc_cfg and (acc_cfg.get("deepspeed_config") or {}).get("deepspeed_config_file"):
        ds_path = str(acc_cfg["deepspeed_config"]["deepspeed_config_file"])
        ds_cfg = kind.read_config(ds_path, shell)

    program = kind.program_text(launch, shell) if launch else ""
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
    if launch and PASS_THROUGH in launch.args:
        notes.append('the program takes the job\'s own arguments ("$@"), as the source does: give them after the '
                     "script's name when you submit it (sbatch job.sh --config=mp); PBS passes none to a job "
                     "script: there, write them into the launch line")
    intent = JobIntent(
        source_cluster=_source_cluster(text),
        scheduler=scheduler,
        launcher=_launcher(launch),
        framework=kind.framework(launch, ds_path, program),
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        world_size=world,
        entrypoint=launch.entry if launch else None,
        script_args=list(launch.args) if launch else [],
        walltime=d.walltime,
        account=d.account,
        queue=d.queue,
        constraint=d.constraint,
        modules=shell.modules,
        env=env,
        python_env=shell.python_env,
        configs=configs,
        container=_container(launch, d),
        wrapper=launch.wrapper if launch else [],
        notes=notes,
    ).with_defaults()
    strategy = kind.strategy(launch, intent.world_size, ds_path, ds_cfg, acc_path, acc_cfg, program)
    return _with_missing(replace(intent, strategy=strategy))


_LOGGING = re.compile(r"break|continue|exit|return|echo|printf|date|hostname|\w+-smi|env|printenv|sleep|set|ulimit|which|pwd|ls|cat|df|free|"
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
        return replace(launch.container, image=d.image)
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

