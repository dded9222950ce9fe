"""Synthesis agent: render a launch template for one cluster from a JobIntent.

How a job is resized for the target (the port rule):
  * the node count is kept (it is what the user asked the scheduler for); every script also reads
    the allocation's node count at run time ($NNODES), so a submission with another size (sbatch
    -N 4) just works. A source that leaves the size to submit time (nodes None) gets directives
    for the smallest job its queue takes, and the header's Submit line shows how to choose one;
  * every node is used fully: ranks per node = the target's devices_per_node (GPUs, Frontier GCDs,
    Aurora tiles), so world_size = nodes * devices_per_node;
  * when that changes the world size, the script's header says so (global batch size and learning
    rate schedules usually depend on it); script_args are passed through unchanged.

Everything a user typed reaches the script through a filter. In shell code, `arg` (shell_word)
for values from the source script where the shell's expansion is part of their meaning (program,
arguments, env values, config paths): $SCRATCH/data stays a path on the target's scratch, while
command substitution and the like stay literal text. `q` (shlex.quote) for names and for the
profiles' literal values. In scheduler directives, `word`: directives are comments to bash, where
quoting protects nothing, so their values must be single safe tokens and anything else is refused.

The header's Submit line names the script as written under `out_dir` (relative to where the user
runs maple-ci, normally their repository root): jobs run in the directory they are submitted from,
and the program's relative paths (train.py, configs) resolve there, as they did for the source.
"""

import math
import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from jinja2 import Environment, FileSystemBytecodeCache, FileSystemLoader, StrictUndefined

from .errors import MapleError
from .containers import port_container, wrapper_notes
from .intent import PER_DEVICE_LAUNCHERS, REQUIRED_FOR_PORT, JobIntent
from .library import TemplateMeta, launch_dir
from .paths import data_dir
from .profiles import ClusterProfile, Queue, pick_queue, walltime_seconds
from .values import Target, path_notes, port_env, port_wrapper, reason
from .programs import describe, model_parallel, nodes_that_fit, port_arguments, program_notes
from .binding import binding_notes, binds_ranks
from .process_model import device_notes, drives_its_machine, model_notes, start_notes, world_change_notes
from .launch_options import carry
from .shell_words import comment, directive_word, shell_word
from .python_env import given_checks, program_check
from .schedulers.arrays import directive_value

DEFAULT_WALLTIME = "01:00:00"
ACCOUNT_PLACEHOLDER = "<ACCOUNT>"


@dataclass
class Job:
    """The job as it will run on the target, computed once and handed to the template."""

    name: str
    nodes: int  # for the directives and the header; launch lines read $NNODES from the allocation
    from_allocation: bool  # the source left the size to submit time: `nodes` is only the default
    gpus_per_node: int  # ranks per node: one per device
    world_size: int
    devices: int  # devices per rank: 1, or those a one-process job's program uses itself (JAX, MirroredStrategy)
    tasks_per_node: int  # scheduler tasks per node: gpus_per_node, or 1 for per-node launchers
    cpus_per_task: int
    walltime: str
    queue: Queue
    account: Optional[str]
    port: int
    gpu_request: Optional[str]
    notes: list[str] = field(default_factory=list)
    array: Optional[str] = None  # the job array directive's value in the target's form (schedulers/arrays.py)


def _stem(source_name: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(source_name).stem).strip("-.")
    return stem or "job"


def output_path(out_dir: Path, profile: ClusterProfile, source_name: str) -> Path:
    return Path(out_dir) / profile.name / f"{_stem(source_name)}.{profile.script_suffix}"


def _fits(queue: Queue, nodes: int, walltime: Optional[str]) -> bool:
    seconds = walltime_seconds(walltime) if walltime else 0
    return queue.min_nodes <= nodes <= queue.max_nodes and seconds <= walltime_seconds(queue.max_walltime_for(nodes))


def require_port_facts(intent: JobIntent, source_name: str = "<text>") -> None:
    """MapleError naming each fact a port cannot do without and the option that gives it."""
    missing = [name for name in REQUIRED_FOR_PORT if getattr(intent, name) is None]
    if missing:
        given = ", ".join(f"the {name} with --{name.replace('_', '-')}" for name in missing)
        # extraction's note lists the checkout's candidate programs and the exact --entrypoint to give
        hint = next((f". {note}" for note in intent.notes if note.startswith("the program is not in the script (")), "")
        raise MapleError(f"{source_name}: cannot port without {', '.join(missing)} (not found in the script); "
                         f"give {given}{hint}")
    if intent.launcher == "ray":  # a Ray cluster's driver: the templates start ranks, not Ray's runtime per node
        size = f" ({intent.world_size} GPU workers on {intent.nodes} nodes)" if intent.world_size and intent.nodes else ""
        raise MapleError(f"{source_name}: the program runs on a Ray cluster{size} that `ray start --head` on one node and "
                         "`ray start --address` on each other node make; maple's launch templates start ranks, not Ray's "
                         "runtime, and the driver alone would run on 1 node: write the target's Ray start per node "
                         "(Ray's 'Deploying on Slurm' guide) around the program, then run it there")


def _allocation_size(intent: JobIntent, profile: ClusterProfile) -> tuple[int, Queue, str]:
    """(default nodes, queue, note) for a source that leaves its size to submit time: the source's
    queue when the target has it, else the first that takes the walltime (the default one when it
    does), and the fewest nodes that queue takes. Choosing by walltime here keeps a 2 h job at 2 h
    in a queue that allows it, not at the longest queue's limit (_walltime)."""
    queue = next((q for q in profile.queues if q.name == intent.queue), None)
    if queue is None:
        default = profile.default_queue()
        queue = pick_queue(profile, default.min_nodes, intent.walltime)
    nodes = queue.min_nodes
    why = f" (queue {queue.name} takes at least {nodes})" if nodes > 1 else ""
    return nodes, queue, (f"the source leaves the node count to submit time: the launch lines take it from the "
                          f"allocation and the directives ask for {nodes} node(s){why} when no size is given; "
                          f"queue {queue.name} takes {queue.min_nodes}-{queue.max_nodes} nodes")


def _fit_model_parallel(intent: JobIntent, profile: ClusterProfile, notes: list[str]) -> int:
    """The source's node count, raised to the fewest nodes whose world size the program's tensor x
    pipeline group divides (Megatron cannot start otherwise); the header says so."""
    parallel = model_parallel(intent.script_args)
    group = math.prod(parallel.values()) if parallel else 1
    fitted = nodes_that_fit(intent.nodes, profile.devices_per_node, group)
    if fitted != intent.nodes:
        notes.append(f"{describe(parallel)} model-parallel ranks need a world size that is a multiple of {group}: "
                     f"{intent.nodes} node(s) of {profile.devices_per_node} devices become {fitted}")
    return fitted


def _longest_queue(profile: ClusterProfile, nodes: int) -> Optional[Queue]:
    """Of the queues that take `nodes` nodes, the one that allows the longest job; None if none does."""
    takers = [q for q in profile.queues if q.min_nodes <= nodes <= q.max_nodes]
    return max(takers, key=lambda q: walltime_seconds(q.max_walltime_for(nodes)), default=None)


def _account(intent: JobIntent, profile: ClusterProfile, notes: list[str]) -> Optional[str]:
    """The account for the directives: the user's, or the source's on its own cluster only; a
    foreign one never lands in a live directive (templates/values.yaml, `account`)."""
    if not intent.account or intent.account_given or intent.source_cluster == profile.name:
        return intent.account
    origin = f"the {intent.source_cluster} script" if intent.source_cluster else "the source script (its cluster is not known)"
    notes.append(f"account {intent.account!r} from {origin} is not used on {profile.name} ({reason('account')}): "
                 f"give yours with --account (in a `/maple port` comment too; accounts there look like {profile.account_example})")
    return None


def _single_process_size(intent: JobIntent, template: TemplateMeta, notes: list[str]) -> JobIntent:
    """One process runs on one node, not a submit-time size; a source's larger size is kept (the
    size is the source's to change) with a note."""
    if template.strategy != "single":
        return intent
    if intent.nodes is None:
        return replace(intent, nodes=1)
    if intent.nodes > 1:
        notes.append(f"the program starts once (one process on one GPU) but the source asks for {intent.nodes} nodes: "
                     "give --nodes 1, or --gpus-per-node and --strategy if the program starts workers of its own")
    return intent


def _process_devices(intent: JobIntent, profile: ClusterProfile, notes: list[str]) -> int:
    """The devices a one-process job's program uses itself: all the source gave it (a JAX process
    sees every device of its node, a MirroredStrategy or DataParallel one the GPUs it is given), at
    most the target node's."""
    given = intent.gpus_per_node or 1
    if intent.world_size in (None, 1) and given == 1 and drives_its_machine(intent):
        notes.append(f"one process with the node's {profile.devices_per_node} devices: the source runs it on a machine of "
                     f"its own, and a {intent.framework} process uses every device it sees")
        return profile.devices_per_node
    if intent.processes() not in (None, 1) or given == 1:
        return 1
    devices = min(given, profile.devices_per_node)
    notes.append(f"one process with {devices} devices, as the source gives its one process {given}"
                 + ("" if devices == given else f" (a {profile.name} node has {profile.devices_per_node})"))
    return devices


def _size_and_queue(intent: JobIntent, profile: ClusterProfile, notes: list[str]) -> tuple[int, Queue]:
    if intent.nodes is None:
        nodes, queue, note = _allocation_size(intent, profile)
        notes.append(note)
        return nodes, queue
    nodes = _fit_model_parallel(intent, profile, notes)
    # A source queue name means something on the target only if the job also fits it there.
    requested = intent.queue if any(q.name == intent.queue and _fits(q, nodes, intent.walltime) for q in profile.queues) else None
    queue = pick_queue(profile, nodes, intent.walltime, requested)
    if intent.queue and requested is None:
        notes.append(f"queue {intent.queue!r} does not exist or does not fit here; using {queue.name!r}")
    return nodes, queue


def _walltime(intent: JobIntent, profile: ClusterProfile, nodes: int, queue: Queue, notes: list[str]) -> tuple[Queue, str]:
    """The source's walltime, else the queue's limit capped at DEFAULT_WALLTIME; one longer than the
    queue allows moves to the longest queue, at its limit."""
    walltime = intent.walltime
    if walltime is None:
        walltime = min(queue.max_walltime_for(nodes), DEFAULT_WALLTIME, key=walltime_seconds)
        notes.append(f"the source gave no walltime; using {walltime}")
    elif not _fits(queue, nodes, walltime) and (longest := _longest_queue(profile, nodes)):
        queue, limit = longest, longest.max_walltime_for(nodes)
        notes.append(f"the source asks for {walltime}, longer than {profile.name} allows for {nodes} node(s); "
                     f"using queue {queue.name} at its limit of {limit}: checkpoint, and resubmit to go on")
        walltime = limit
    return queue, walltime


def resolve_job(intent: JobIntent, profile: ClusterProfile, template: TemplateMeta, source_name: str = "<text>") -> Job:
    """Apply the port rule (module docstring) and pick queue, walltime and account for the target."""
    require_port_facts(intent, source_name)
    notes = list(intent.notes)
    intent = _single_process_size(intent, template, notes)
    nodes, queue = _size_and_queue(intent, profile, notes)
    queue, walltime = _walltime(intent, profile, nodes, queue, notes)
    # One process stays one (the single-device templates), with the devices the source gave it;
    # other jobs fill the node.
    single = template.strategy == "single"
    gpus = 1 if single else profile.devices_per_node
    devices = _process_devices(intent, profile, notes) if single else 1
    # one process runs on the first node however many the job holds (a source's whole-node request)
    world_size = 1 if single else nodes * gpus
    notes += world_change_notes(intent, profile, (1 if single else nodes, gpus))
    account = _account(intent, profile, notes)
    tasks = gpus if template.launcher in PER_DEVICE_LAUNCHERS else 1
    return Job(
        name=_stem(source_name),
        nodes=nodes,
        from_allocation=intent.nodes is None,
        gpus_per_node=gpus,
        world_size=world_size,
        devices=devices,
        tasks_per_node=tasks,
        cpus_per_task=max(1, profile.cpus_per_node // tasks),
        walltime=walltime,
        queue=queue,
        account=account,
        port=profile.master_port,
        gpu_request=profile.gpu_request.format(gpus=gpus * devices, total_gpus=world_size * devices) if profile.gpu_request else None,
        notes=notes,
    )


def _cores_per_rank(profile: ClusterProfile, job: Job) -> int:
    """The cores each rank runs on: the launch line's binding where the profile gives it (one rank
    per device, the whole node), else the node's cores over its ranks."""
    if profile.cores_per_rank and job.tasks_per_node == profile.devices_per_node:
        return profile.cores_per_rank
    return max(1, profile.cores_per_node // job.gpus_per_node)


def _script_env(intent: JobIntent, profile: ClusterProfile, framework_env: dict[str, str], job: Job
                ) -> tuple[dict[str, str], dict[str, str]]:
    """(the target's settings, the source's variables templates/values.yaml lets through, with
    notes for the rest). Kept apart: the target's values are literal and the user's may expand."""
    site = {**profile.env, **framework_env}
    target = Target(profile.name, profile.gpu_vendor, intent.source_cluster == profile.name, _cores_per_rank(profile, job))
    user, notes = port_env(intent.env, target, set(site))
    job.notes += notes
    return site, user


def _deepspeed(intent: JobIntent) -> Optional[dict]:
    """None when the program's own arguments already name a DeepSpeed config, or when the source's
    own deepspeed launcher ran it with none: that launcher hands the program its arguments as
    given, so the program builds its config itself (deepspeed.initialize(config=...),
    https://www.deepspeed.ai/getting-started/, read 2026-11-29) and runs as it did, with no
    argument added; else {"path": the config file that came with the source, or None for the script
    to write a minimal ZeRO-3 one}."""
    if intent.launcher == "deepspeed" or any(a == "--deepspeed" or a.startswith("--deepspeed_config")
                                             for a in intent.script_args):
        return None
    return {"path": intent.configs.get("deepspeed")}


def deepspeed_notes(intent: JobIntent, template: TemplateMeta) -> list[str]:
    """The header's word on the --deepspeed_config the port gives a DeepSpeed program whose
    arguments name none (_deepspeed): the read-back gate accepts those two words and no others."""
    given = _deepspeed(intent) if template.framework == "deepspeed" else None
    if given is None:
        return []
    what = f"the source's config {given['path']}" if given["path"] else "a minimal ZeRO-3 config it writes (ds_config.maple.json)"
    return [f"the program's arguments name no DeepSpeed config: the port passes --deepspeed_config with {what}; "
            "drop it if the program builds its own"]


def split_entrypoint(entrypoint: str) -> tuple[bool, str]:
    """(whether it is a module, the script path or module name): extract writes `python -m pkg.mod`
    as the entrypoint "-m pkg.mod", and launchers take the flag and the name as two words."""
    if entrypoint.startswith("-m "):
        return True, entrypoint[3:]
    return False, entrypoint


def _environment() -> Environment:
    # trim_blocks/lstrip_blocks: a {% tag %} on its own line leaves no blank line in the script.
    # The bytecode cache spares each process compiling the templates (0.1 s per target); its
    # entries are checked against the template's source, so an edited template is compiled again.
    (cache_dir := data_dir() / "jinja").mkdir(exist_ok=True)
    cache = FileSystemBytecodeCache(str(cache_dir))
    env = Environment(loader=FileSystemLoader(str(launch_dir())), undefined=StrictUndefined, bytecode_cache=cache,
                      autoescape=False, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["q"] = lambda value: shlex.quote(str(value))
    env.filters["arg"] = shell_word
    env.filters["word"] = directive_word
    env.filters["comment"] = comment
    return env


def _require_usable(template: TemplateMeta, profile: ClusterProfile) -> None:
    if template.cluster != profile.name:
        raise MapleError(f"template {template.id} is for {template.cluster}, not {profile.name}")
    if not template.supported:
        raise MapleError(f"{template.framework} {template.strategy} cannot run on {profile.display_name}: {template.reason}")


def _literal_argument_notes(args: list[str], arrays: dict) -> list[str]:
    """Arguments the source computed in the shell ($(...), $((...))) and the port passes as text."""
    return [f"argument {arg!r} is passed as literal text: a port never runs what the source computed "
            "($(...), $((...))); put the value in yourself"
            for arg in args if "$" in arg and shell_word(arg, arrays).startswith("'")]


def _source_setup_notes(intent: JobIntent, profile: ClusterProfile, framework: str) -> list[str]:
    """The source's own modules and Python environment, which the port does not carry over."""
    notes = []
    if intent.modules:
        notes.append(f"the source's modules ({', '.join(intent.modules)}) are not loaded: {reason('modules')}")
    if intent.python_env:
        used = (f"{profile.name}'s {framework} set-up is used" if profile.provides(intent.framework)
                else f"the {intent.framework} program needs yours there (--python-env)")
        notes.append(f"the source's Python environment ({intent.python_env}) is not carried over; {used}")
    return notes


def render(intent: JobIntent, profile: ClusterProfile, template: TemplateMeta, source_name: str = "<text>",
           out_dir: Path = Path("scripts")) -> str:
    """The complete batch script for `profile` from `template`, to be written under `out_dir` (the
    CLI's and the bot's default shown; see the module docstring); MapleError if it cannot be made."""
    _require_usable(template, profile)
    job = resolve_job(intent, profile, template, source_name)
    nodes = None if job.from_allocation else job.nodes
    args, shape_notes = port_arguments(intent, nodes, job.gpus_per_node)
    job.notes += shape_notes + program_notes(args, intent.framework, nodes, job.gpus_per_node)
    setup = profile.setup_for(template.framework)
    site_env, user_env = _script_env(intent, profile, setup.env, job)
    job.notes += _literal_argument_notes(intent.script_args, intent.arrays)
    if intent.array:  # port.py refuses a target with no array form before rendering
        job.array, array_notes = directive_value(intent.array, profile.scheduler)
        job.notes += array_notes
    module, program = split_entrypoint(intent.entrypoint)
    container = port_container(intent, profile, template.launcher)
    per_device = template.launcher in PER_DEVICE_LAUNCHERS
    executable = not module and not program.endswith(".py")
    check, check_notes = program_check(program if executable else None, intent.python_env, profile,
                                       bool(container.words or container.srun_options))
    wrapper, dropped = port_wrapper(intent.wrapper, profile.name)
    job.notes += container.notes + dropped + wrapper_notes(wrapper, per_device, profile, template.launcher)
    job.notes += path_notes(intent.script_args, profile.name, intent.source_cluster == profile.name, intent.entrypoint)
    job.notes += _source_setup_notes(intent, profile, template.framework)
    job.notes += model_notes(intent, template)  # a process model the target forces (the read-back gate checks it)
    job.notes += start_notes(intent, template, job.gpus_per_node, None if job.from_allocation else job.nodes)
    job.notes += device_notes(intent, template, job.devices, profile.devices_per_node)
    job.notes += binding_notes(intent, profile, template, job.gpus_per_node)
    job.notes += deepspeed_notes(intent, template) + check_notes
    carried = carry(intent, template)
    job.notes += carried.notes
    job.notes += [template.reason] if template.reason else []
    return _environment().get_template(template.path).render(
        meta=template,
        profile=profile,
        setup=setup,
        site_env=site_env,
        user_env=user_env,
        exported=[*site_env, *user_env, *carried.env],
        carried=carried,
        job=job,
        module=module,
        entrypoint=program,
        executable=executable,
        checks=[*given_checks(intent.given_env), *([check] if check else [])],
        args=args,
        loops=intent.loops,
        arrays=intent.arrays,
        deepspeed=_deepspeed(intent) if template.framework == "deepspeed" else None,
        configs=intent.configs,
        container=container.words,
        container_srun=container.srun_options,
        edf=container.edf,
        wrapper=wrapper if per_device else [],
        bind_ranks=binds_ranks(intent, profile, template),
        source_name=source_name,
        script_path=output_path(out_dir, profile, source_name),
    )
