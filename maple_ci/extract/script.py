"""From the launch the walk found to a JobIntent: node and device counts (framework and strategy
are `kind`'s), and what the port must know about (placeholders, sizes chosen at submit time, what
it does not carry)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from ..errors import MapleError
from ..intent import REQUIRED_FOR_PORT, TEMPLATE_FRAMEWORKS, JobIntent
from ..launchers import DL_LAUNCHERS, MPI_LAUNCHERS
from ..profile_files import cluster_data
from ..schedulers.arrays import from_dropped, parse as parse_array
from . import kind
from .. import schedulers
from .binding import source_binding
from .candidates import from_arguments, no_program, program_hint
from .counts import Counts, launch_counts
from .frameworks import program_files
from .directives import Directives, parse_directives, runtime_vars
from .identity import identify, job_scheduler
from .evaluate import PASS_THROUGH, runtime_values
from .launch import Launch
from .program import best
from .launcher_options import config_options, launcher_options
from .live import arrays as indexed_arrays, loops as launch_loops, repeated, unknown_notes
from .options import last
from .ray_cluster import ray_intent, server_intent
from .setup import REPORTING, setup_notes
from .shell import bash_syntax_error, parse
from .submit import submitted, without_arguments
from .submitters import with_submitter
from .walk import Shell

# Variables every target recomputes for itself; copying them across clusters would be wrong.
RENDEZVOUS_VARS = frozenset(
    {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK",
     "MASTER_ADDR", "MASTER_PORT"}
)
# A script that reads the allocation's size is sized when it is submitted (`sbatch -N 4 job.sh`).
_READS_SIZE = re.compile(r"\$\{?(?:SLURM_NNODES|SLURM_JOB_NUM_NODES|SLURM_JOB_NODELIST|SLURM_NODELIST|"
                         r"SLURM_NTASKS|SLURM_NPROCS|PBS_NODEFILE)\b")

# A shebang naming a shell of another family (`#!/bin/tcsh`, `#!/usr/bin/env fish`): bash would misread it
_OTHER_SHELL = re.compile(r"#![ \t]*(?:\S*/)?(?:env[ \t]+)?(t?csh|fish)\b")


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
        other_shell = _OTHER_SHELL.match(text)
        if other_shell:
            raise MapleError(f"line 1: the script is written for {other_shell.group(1)}, whose syntax maple does not "
                             "read (it reads sh and bash scripts); rewrite the launch in bash, or give the program with "
                             "--entrypoint and the size with --nodes/--gpus-per-node")
        problem = bash_syntax_error(text)
        if problem:
            raise MapleError(f"{problem}; fix the shell syntax there")
        base = Path(base_dir) if base_dir is not None else None
        try:
            root = Path(root) if root is not None else base
            text, submitter = with_submitter(text, base / Path(name).name, root) if base and root else (text, None)
            intent = _extract_script(text, base, root, follow_submit=True)
            return replace(intent, notes=[submitter, *intent.notes]) if submitter else intent
        except RecursionError:  # ( ( ( ... ), ${a:-${a:-...}} thousands deep: bounded, like the budget
            raise MapleError("the script nests subshells, groups or expansions deeper than extraction follows; "
                             "extraction stopped") from None
    except MapleError as exc:
        raise MapleError(f"{name}: {exc}", exc.exit_code) from exc


def _extract_script(text: str, base_dir: Optional[Path], root: Optional[Path], follow_submit: bool = False) -> JobIntent:
    d = parse_directives(text)
    asked = d.gpus_per_node or (d.gpus_per_task * d.ntasks_per_node if d.gpus_per_task and d.ntasks_per_node else 0)
    identity = identify(text, asked)
    source = identity.cluster
    d = _on_source_nodes(d, source)
    notes = [*d.notes, *([identity.note] if identity.note else [])]
    _default_size(d, text, notes)
    shell = _walked(text, d, base_dir, root)
    launch = best(shell.launches)
    live = _program_words(launch)
    _read_bare(launch)
    _step_allocation(launch, d)
    if launch is None and follow_submit and (job := submitted(shell.submits, shell.read)):
        return _submitted_intent(job, base_dir, root)
    cfg = _Configs.read(launch, shell)
    files = program_files(launch.entry, shell) if launch else []
    program = kind.program_text(launch, shell, files) if launch else ""
    notes = _one_node(launch, d, notes)
    nodes, gpus_per_node, world = _sizes(launch, d, cfg.accelerate)
    loops, loop_notes = launch_loops(launch, shell)
    intent = JobIntent(
        source_cluster=source,
        scheduler=job_scheduler(text, d, launch.stages[0][0] if launch and launch.stages else None, notes),
        launcher=_launcher(launch),
        framework=kind.framework(launch, cfg.ds_path, program, files),
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        world_size=world,
        entrypoint=launch.entry if launch else None,
        script_args=[arg for arg in live[1:] if not arg or without_arguments(arg)],  # `${5:-}`: no word; `''`: one
        walltime=d.walltime,
        account=d.account,
        queue=d.queue or _step_queue(launch, d),
        constraint=d.constraint,
        modules=shell.modules,
        env=_env(shell, launch),
        python_env=shell.python_env,
        configs=cfg.paths(),
        launcher_options=launcher_options(launch),
        config_options=config_options(cfg.accelerate),
        container=_container(launch, d),
        wrapper=launch.wrapper if launch else [],
        array=from_dropped(d.dropped),
        device_binding=source_binding(launch, d),
        loops=loops,
        arrays=indexed_arrays(live, shell),
        notes=_notes(notes, d, shell, launch, live) + loop_notes + unknown_notes(live, shell),
    ).with_defaults()
    intent = server_intent(ray_intent(intent, launch, shell, d), launch, d)
    strategy = kind.NEXT if intent.framework in TEMPLATE_FRAMEWORKS else \
        kind.own_strategy(intent.framework, launch, program, intent.world_size, intent.gpus_per_node)
    if strategy is kind.NEXT:
        strategy = kind.strategy(launch, intent.world_size, cfg.ds_path, cfg.deepspeed, cfg.acc_path, cfg.accelerate, program)
    # `srun "$@"`: the job's arguments are the whole command (a launcher forking workers, or not), so no strategy
    command = bool(launch) and not launch.names() & (DL_LAUNCHERS | {"python"})
    return _with_missing(_program_outside(replace(intent, strategy=strategy), root, base_dir, command, shell))


def _program_words(launch: Optional[Launch]) -> list:
    """The program and its arguments as written, a job argument with its default kept one
    (`${1:-base}`: the port passes the job's argument, or the default where none is given)."""
    return [launch.entry or "", *launch.args] if launch else [""]


def _read_bare(launch: Optional[Launch]) -> None:
    """The launch as a submission with no arguments runs it, where the program, its configs and its
    kind are read (`python ${1:-train.py}`, `--deepspeed ${2:-ds.json}`): a job argument's default."""
    if launch is not None:
        launch.entry = without_arguments(launch.entry) if launch.entry else launch.entry
        launch.args = [without_arguments(arg) for arg in launch.args]
        launch.stages = [(name, {option: [without_arguments(v) if isinstance(v, str) else v for v in values]
                                 for option, values in options.items()}) for name, options in launch.stages]


def _on_source_nodes(d: Directives, source: Optional[str]) -> Directives:
    """Job-wide totals only (Gadi's `-l ncpus=96 -l ngpus=8`): the nodes they fill on the source's nodes;
    where the source is not known, as its scheduler places them on nodes of no known shape."""
    cores = cluster_data().get(source, {}).get("cores_per_node") if source else None
    return d.on_nodes_of(cores or 0)


def _program_outside(intent: JobIntent, root: Optional[Path], near: Optional[Path], command: bool,
                     shell: Shell) -> JobIntent:
    """No program, or only the job's arguments as the program: unknown, with a note on how to give it."""
    if from_arguments(intent.entrypoint):
        why = f"it is the job's arguments, {intent.entrypoint}, given when the job is submitted"
        return replace(intent, entrypoint=None, script_args=[], strategy=None if command else intent.strategy,
                       notes=[*intent.notes, program_hint(root, near, why)])
    if intent.entrypoint is None:
        return replace(intent, notes=[*intent.notes, program_hint(root, near, no_program(shell))])
    return intent


def _default_size(d: Directives, text: str, notes: list[str]) -> None:
    if d.nodes is None and not d.nodes_given and not d.spreads and d.scheduler != "none":
        if _READS_SIZE.search(text):
            notes.append("the node count is chosen at submit time; the port takes it from the allocation")
        else:
            d.nodes = 1  # what sbatch and qsub allocate when nothing asks for more


def _walked(text: str, d: Directives, base_dir: Optional[Path], root: Optional[Path]) -> Shell:
    unit = schedulers.find(d.scheduler)  # a job with a host file (PBS_NODEFILE) has one line per rank slot
    slots = d.ntasks_per_node if unit and "node_file" in unit.job_vars else None
    shell = Shell(root, base_dir, runtime_values(d.nodes, runtime_vars(d), slots, d.gpus_per_node), arguments_known=False,
                  job_env=unit.job_environment | {n for names in unit.job_vars.values() for n in names} if unit else frozenset())
    shell.run(parse(text, shell.budget))
    return shell


def _submitted_intent(job, base_dir: Optional[Path], root: Optional[Path]) -> JobIntent:
    # the job runs where it was submitted: the submitted script's paths are read from here
    intent = _extract_script(job.text, base_dir, root)
    note = (f"this script submits {job.path} (`{job.line[:120]}`): the port is of {job.path} with the "
            "submit line's options and arguments written in; submit the port in place of both")
    if job.read_as:
        note += (f"; {job.path} is outside the checkout, so its file was read as {job.read_as}, the checkout's file "
                 "at the end of that path: check that it is the same script")
    given = [f"the submit line sets {', '.join(job.given)} per submission, to a value its own shell expands "
             "(a loop's): give it when you submit the port, as the source did; without it the job stops at once"
             ] if job.given else []
    return replace(intent, notes=[note, *given, *intent.notes], given_env=job.given or [])


def _step_allocation(launch: Optional[Launch], d: Directives) -> None:
    """`srun ... python x.py` run outside a job creates its own allocation from its options, as
    sbatch would from the same ones (srun(1): "If necessary, srun will first create a resource
    allocation"): its time limit, node count (one node for one task) and GPUs, where the script has
    no directives of its own. Read through the Slurm unit, the one home of those options."""
    if d.scheduler != "none" or not launch or not launch.stages or launch.stages[0][0] != "srun":
        return
    opts, resolve = launch.stages[0][1], launch.shell.resolve
    words = [f"--{name.replace('_', '-')}" + (f"={resolve(value)}" if value else "")
             for name, values in opts.items() for value in values]
    step = schedulers.get("slurm").read("#SBATCH " + shlex.join(words) + "\n", strict=False)
    nodes = step.nodes or (1 if (step.ntasks or 1) == 1 and not step.ntasks_per_node else None)
    d.walltime = d.walltime or step.walltime
    d.nodes = d.nodes or nodes
    d.gpus_per_node = d.gpus_per_node or step.gpus_per_node or (step.gpus if nodes == 1 else None)


def _step_queue(launch: Optional[Launch], d: Directives) -> Optional[str]:
    """`srun -p llm_s ...` run outside a job allocates its own: its QOS, else its partition."""
    if d.scheduler != "none" or not launch or not launch.stages or launch.stages[0][0] != "srun":
        return None
    opts = launch.stages[0][1]
    return launch.shell.resolve(last(opts, "qos") or last(opts, "partition"))


@dataclass
class _Configs:
    """The DeepSpeed and Accelerate config files the launch names, and what they say when readable."""

    named: dict  # as the launch line names them: {"deepspeed": path, "accelerate": path}
    ds_path: Optional[str] = None  # the DeepSpeed file read (the line's, or the one its accelerate config names)
    deepspeed: Optional[dict] = None
    accelerate: Optional[dict] = None

    @property
    def acc_path(self) -> Optional[str]:
        return self.named.get("accelerate")

    def paths(self) -> dict[str, str]:
        return {name: path for name, path in self.named.items() if path}

    @classmethod
    def read(cls, launch: Optional[Launch], shell: Shell) -> "_Configs":
        if launch is None:
            return cls({})
        acc = next((o for n, o in launch.stages if n == "accelerate"), None)
        ds_path = kind.deepspeed_config(launch)
        cfg = cls({"deepspeed": ds_path, "accelerate": last(acc, "config_file") if acc else None}, ds_path)
        cfg.accelerate = kind.read_config(cfg.acc_path, shell)
        cfg.deepspeed = kind.read_config(ds_path, shell)
        named = ((cfg.accelerate or {}).get("deepspeed_config") or {}).get("deepspeed_config_file")
        if cfg.deepspeed is None and named:  # an accelerate config that names its DeepSpeed file
            cfg.ds_path, cfg.deepspeed = str(named), kind.read_config(str(named), shell)
        return cfg


def _one_node(launch: Optional[Launch], d: Directives, notes: list[str]) -> list[str]:
    if launch and not launch.names() & (MPI_LAUNCHERS | DL_LAUNCHERS) and d.nodes is None and not d.nodes_given:
        d.nodes = 1  # one process: whatever the allocation, the program runs on one node
        return [n for n in notes if not n.startswith("the node count is chosen at submit time")]
    return notes


def _sizes(launch: Optional[Launch], d: Directives, acc_cfg: Optional[dict]) -> tuple:
    """(nodes, GPUs per node, world size): the directives' where they fix them, else the launch's."""
    counts = launch_counts(launch, d, acc_cfg) if launch else Counts()
    nodes = d.nodes if d.nodes_given and d.nodes else counts.nodes or d.nodes
    return nodes, d.gpus_per_node or counts.per_node, _world(counts, nodes, launch)


def _world(counts: Counts, nodes: Optional[int], launch: Optional[Launch]) -> Optional[int]:
    """The launch's world size; under a per-node launcher, its workers per node times its nodes."""
    forks = bool(launch and launch.names() & DL_LAUNCHERS)
    if counts.world is None and counts.per_node and (counts.nodes or nodes) and forks:
        return counts.per_node * (counts.nodes or nodes)
    return counts.world


def _env(shell: Shell, launch: Optional[Launch]) -> dict:
    return {key: value for key, value in {**shell.env, **(launch.env if launch else {})}.items()
            if key not in RENDEZVOUS_VARS and isinstance(value, str)}


def _notes(notes: list[str], d: Directives, shell: Shell, launch: Optional[Launch], words: list) -> list[str]:
    notes = list(notes)
    if launch:
        notes += [note for note in launch.notes if note not in notes]
    line = next((n for n, _, found in shell.commands if found is launch), None) if launch else None
    array = [x for x in d.dropped if _ARRAY.search(x)]
    setup, named = setup_notes(shell, launch, line, None if from_dropped(array) else array)
    notes += _not_carried(d, shell, launch, named) + setup
    notes += [note for note in shell.notes if note not in notes]
    taken = _job_arguments(words)
    if taken:
        notes.append(f"the program takes the job's own arguments ({', '.join(taken)}), as the source does: give them "
                     "after the script's name when you submit it (sbatch job.sh --config=mp); PBS passes none to a "
                     "job script: there, write them into the launch line")
    return notes


# The job script's own arguments as a launch word reads them: "$@", $1, ${10}, ${1:-default}
_POSITIONAL = re.compile(re.escape(PASS_THROUGH) + r"|\$[1-9]|\$\{[1-9][0-9]*(?::?[-=][^$`{}]*)?\}")


def _job_arguments(words: list) -> list[str]:
    """The job's own arguments the launch passes on (kept as shell words by the port: shell_word)."""
    if from_arguments(words[0]):  # the whole program is the job's arguments: _program_outside's note
        return []
    return sorted({found for word in words for found in _POSITIONAL.findall(word)})


# Commands that report, plus the set-up commands the port replaces with its own (module, conda, pip, python)
_LOGGING = re.compile(rf"{REPORTING.pattern}|module|conda|pip\d?|python[\d.]*")
# Job array directives as the schedulers spell them (Slurm --array, PBS -J)
_ARRAY = re.compile(r"array|^-J\s")


def _not_carried(d: Directives, shell: Shell, launch: Optional[Launch], named: set) -> list[str]:
    """Notes naming what the port does not carry: the source's directives it does not translate and
    its commands besides the set-up and the launch (a port runs only its own; the user's may be
    needed: data staging, a requeue trap, a `cd`)."""
    notes = []
    dropped = [x for x in d.dropped if not parse_array(x)]  # an array is carried (schedulers/arrays.py)
    if dropped:
        notes.append(f"directives not carried over: {', '.join(dropped)}")
    kept, logging, others = [], {}, []
    for line, words, found in shell.commands:
        if found is launch or line in named:  # the launch, or set-up a note of its own names (extract/setup.py)
            continue
        if launch and found and found.score and found.entry:  # another launch of the job, before or after
            entry = found.entry.split(" ", 1) if found.entry.startswith("-m ") else [found.entry]  # "-m pkg.mod"
            others.append(f"`{shlex.join([*entry, *found.args])[:160]}` (line {line}{repeated(found, shell)})")
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
    if others:
        notes.append(f"the job runs {len(others) + 1} programs one after another; the port runs one of them, "
                     f"`{launch.entry}` (with its arguments), not the other {len(others)}: " + "; ".join(others)
                     + ". Port each on its own (--entrypoint), or add its line to the port")
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

