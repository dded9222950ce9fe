"""Node and device counts of a launch: what the MPI launcher starts (srun, mpiexec, aprun...), then
what a per-node launcher inside it forks (torchrun, deepspeed, accelerate), with the allocation's
layout where the launch line leaves it to the scheduler."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Callable, Optional

from ..launchers import DL_LAUNCHERS, MPI_LAUNCHERS, grammar, launcher, parse_options
from .directives import Directives, count, per_node
from .frameworks import by_program
from .launch import Launch
from .options import last

Value = Callable[[dict, str], Optional[str]]  # an option's value with the job's known variables put in


@dataclass
class Counts:
    nodes: Optional[int] = None
    per_node: Optional[int] = None  # processes per node that each drive a device
    world: Optional[int] = None


def launch_counts(launch: Launch, d: Directives, acc_cfg: Optional[dict]) -> Counts:
    def value(opts: dict, name: str) -> Optional[str]:
        return launch.shell.resolve(last(opts, name))

    outer = next(((n, o) for n, o in launch.stages if n in MPI_LAUNCHERS), None)
    inner = next(((n, o) for n, o in reversed(launch.stages) if n in DL_LAUNCHERS), None)
    started = _outer_counts(outer, d, value) if outer else Counts()
    if inner is None:
        return _without_per_node_launcher(launch, bool(outer), started)
    counts = _PER_NODE[inner[0]](inner[1], value, bool(outer), acc_cfg or {})
    counts.nodes = counts.nodes or started.nodes
    return counts


def _outer_counts(outer: tuple, d: Directives, value: Value) -> Counts:
    name, opts = outer
    nodes, tasks, ppn = _srun_counts(opts, d, value) if name == "srun" else _mpi_counts(name, opts, d, value)
    if ppn is None and tasks and (nodes or d.nodes):
        ppn = per_node(tasks, nodes or d.nodes)
    if tasks is None and ppn and (nodes or d.nodes):
        # a count per node alone starts it on every node of the launch (Open MPI's mpirun(1) -npernode: "on
        # each node, launch this many processes"; Open MPI 4.0.3,
        # https://manpages.ubuntu.com/manpages/focal/en/man1/mpiexec.openmpi.1.html, read 2026-11-29)
        tasks = ppn * (nodes or d.nodes)
    if nodes is None and tasks and ppn:
        nodes = per_node(tasks, ppn)
    return Counts(nodes, ppn, tasks)


def _srun_counts(opts: dict, d: Directives, value: Value) -> tuple:
    nodes = count(value(opts, "nodes"))
    ppn = count(value(opts, "ntasks_per_node"))
    tasks = count(value(opts, "ntasks"))
    if tasks is None and "ntasks" not in opts:
        ppn, tasks = _allocation_layout(opts, d, nodes, ppn)
    return nodes, tasks, ppn


def _allocation_layout(opts: dict, d: Directives, nodes: Optional[int], ppn: Optional[int]) -> tuple:
    """Without -n the step takes the allocation's layout: --ntasks-per-node, else -n, else one per node."""
    step_nodes = nodes or d.nodes
    ppn = ppn or (d.ntasks_per_node if "ntasks_per_node" not in opts else None)
    if ppn and step_nodes:
        return ppn, ppn * step_nodes
    if d.ntasks and not nodes:
        return ppn, d.ntasks
    if not d.spreads and "ntasks_per_node" not in opts:
        return ppn, step_nodes
    return ppn, None


def _mpi_counts(name: str, opts: dict, d: Directives, value: Value) -> tuple:
    grammar = launcher(name)
    tasks = grammar.count("world", lambda option: count(value(opts, option)))
    ppn = grammar.count("per_node", lambda option: count(value(opts, option)))
    if ppr := re.fullmatch(r"ppr:(\d+):node\b.*", value(opts, "map_by") or ""):
        ppn = int(ppr.group(1))
    if tasks is None and (name == "ibrun" or ppn is None and grammar.trace.get("default_per_node") == "slots"):
        tasks = d.tasks()  # one rank per slot of the allocation, its task count (grammars.yaml; ibrun's default)
    nodes, slots = _host_slots(value(opts, "host"))
    nodes = nodes or count(value(opts, "nodes"))
    if tasks is None and ppn is None and nodes and isinstance(grammar.trace.get("default_per_node"), int):
        # flux run -N 2: "the number of tasks or slots will be set to the number of requested nodes"
        # (flux-core doc/man1/common/job-param-common.rst, --exclusive, read 2026-11-29)
        ppn = grammar.trace["default_per_node"]
        tasks = nodes * ppn
    return nodes, tasks, ppn or slots


def _host_slots(hosts: Optional[str]) -> tuple[Optional[int], Optional[int]]:
    """`-H gpu01:4,gpu02:4`: two nodes of 4 slots (one rank per slot); unknown otherwise."""
    slots = re.findall(r"[^,:\s]+:(\d+)", hosts or "")
    if not slots or len(slots) != len(hosts.split(",")) or len(set(slots)) != 1:
        return None, None
    return len(slots), int(slots[0])


def _without_per_node_launcher(launch: Launch, outer: bool, started: Counts) -> Counts:
    # python, or a framework's console script (`srun fairseq-train`): the ranks the launcher starts
    if outer and launch.entry and ("python" in launch.names() or by_program(launch.entry)):
        return started
    if outer:  # a wrapper script: only the node count is known
        return Counts(nodes=started.nodes)
    if launch.entry:  # plain python: one process, on the devices the script makes visible (DataParallel's), else one
        visible = _visible_devices(lambda opts, name: launch.shell.resolve(last(opts, name)),
                                   launch.shell.vars.get("CUDA_VISIBLE_DEVICES"))
        return Counts(1, count(visible) or 1, 1)
    return Counts()


def _torchrun(opts: dict, value: Value, outer: bool, cfg: dict) -> Counts:
    nodes = _fixed_nnodes(value(opts, "nnodes")) if "nnodes" in opts else 1  # torchrun's default
    workers = value(opts, "nproc_per_node") if "nproc_per_node" in opts else _torchrun_default(opts)
    return Counts(nodes, count(_visible_devices(value) if workers in ("gpu", "auto") else workers))


# `CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1,2,3}`: the scheduler's list where it set one (a job
# that asks for GPUs, whose count the directives give), else the default's (bash's ${parameter:-word})
_DEFAULT_LIST = re.compile(r"\$\{CUDA_VISIBLE_DEVICES:?-([\d,]+)\}")


def _visible_devices(value: Value, written: Optional[str] = None) -> Optional[str]:
    """torchrun --nproc-per-node=gpu (auto on a GPU node) starts one worker per GPU the node shows it
    (torchrun's documentation, read 2026-11-29), and a single process sees them all (DataParallel's
    devices): as many as the CUDA_VISIBLE_DEVICES the script sets lists; None when it sets none (the
    allocation's GPUs decide). `written`: the script's assignment, where it names a default list."""
    listed = value({"devices": ["$CUDA_VISIBLE_DEVICES"]}, "devices") or ""
    if not listed and isinstance(written, str) and (default := _DEFAULT_LIST.fullmatch(written)):
        listed = default.group(1)
    devices = [device for device in listed.split(",") if device.strip()]
    return str(len(devices)) if devices and "$" not in listed else None


def _torchrun_default(opts: dict) -> Optional[str]:
    """Without --nproc_per_node torchrun starts its default (one worker: grammars.yaml), not one per
    device; not so for a launcher read with torchrun's grammar that has options of its own (`fabric run --devices 4`)."""
    torchrun = launcher("torchrun")
    return str(torchrun.trace["default_per_node"]) if all(torchrun.role(name) for name in opts) else None


def _fixed_nnodes(nnodes: Optional[str]) -> Optional[int]:
    """`--nnodes 4` or `4:4`; an elastic range (`1:4`) is only known at run time."""
    if nnodes and (":" not in nnodes or len(set(nnodes.split(":"))) == 1):
        return count(nnodes.split(":")[0])
    return None


# deepspeed --launcher openmpi hands the ranks to mpirun with --launcher_args appended (DeepSpeed's
# OpenMPIRunner, deepspeed/launcher/multinode_runner.py, read 2026-11-29); its other MPI runners unconfirmed
_DS_MPI = {"openmpi": "mpirun"}


def _deepspeed(opts: dict, value: Value, outer: bool, cfg: dict) -> Counts:
    mpi = _DS_MPI.get((value(opts, "launcher") or "").lower())
    if mpi and "launcher_args" in opts:
        return _launcher_args(mpi, value(opts, "launcher_args") or "", value)
    nodes = None
    if "num_nodes" in opts:
        nodes = count(value(opts, "num_nodes"))
    elif "hostfile" not in opts and not outer:
        nodes = 1  # no hostfile: DeepSpeed runs on localhost
    return Counts(nodes, count(value(opts, "num_gpus")))


def _launcher_args(mpi: str, args: str, value: Value) -> Counts:
    """`--launcher_args '-np 2 -H a:1,b:1'`: the MPI launcher's own options name the ranks and hosts."""
    try:
        opts, _ = parse_options(shlex.split(args), grammar(mpi))
    except ValueError:
        return Counts()
    tasks = launcher(mpi).count("world", lambda option: count(value(opts, option)))
    nodes, slots = _host_slots(value(opts, "host"))
    return Counts(nodes, launcher(mpi).count("per_node", lambda option: count(value(opts, option))) or slots, tasks)


def _accelerate(opts: dict, value: Value, outer: bool, cfg: dict) -> Counts:
    machines = _given_or_configured(opts, value, cfg, "num_machines")  # a flag given but unknown here stays unknown
    if machines is None and "config_file" not in opts:
        machines = "1"  # accelerate's default without a config file
    nodes, world = count(machines), count(_given_or_configured(opts, value, cfg, "num_processes"))
    return Counts(nodes, per_node(world, nodes), world)


def _given_or_configured(opts: dict, value: Value, cfg: dict, name: str) -> Optional[str]:
    if name not in opts and cfg.get(name) is not None:
        return str(cfg[name])
    return value(opts, name)


_PER_NODE = {"torchrun": _torchrun, "deepspeed": _deepspeed, "accelerate": _accelerate}
