"""The rank arithmetic of the trace's launcher stand-ins (standin.py): which ranks are traced, the
variables each gets, a worker's command, the devices a task is bound to, a rendezvous host, an
accelerate config's settings. Pure functions of their arguments, stdlib only: imported inside the sandbox.
"""

from __future__ import annotations

from pathlib import Path

from launch_options import gres_gpus, last  # bound in from maple_ci/launchers/options.py
from visible import visible_list  # bound in from maple_ci/trace/visible.py

MAX_RANKS = 16  # ranks actually traced per launch: enough to see every per-node and per-rank difference


def number(value) -> int | None:
    try:
        return int(str(value).split(":")[-1])  # torchrun's --nnodes MIN:MAX runs MAX at most
    except (TypeError, ValueError):
        return None


def indexed(nodes: list, index, entries_per_node: int) -> list:
    """The node holding entry `index` of a list with `entries_per_node` entries per node (pbsdsh -n);
    every node without an index."""
    i = number(index)
    return nodes if i is None else [nodes[min(i // entries_per_node, len(nodes) - 1)]]


def traced(world: int, per_node: int) -> list:
    """Which ranks run: every rank of the first two nodes and the last rank, MAX_RANKS at most."""
    chosen = [r for r in range(min(world, 2 * per_node))] + [world - 1]
    return sorted(set(chosen))[:MAX_RANKS]


def rank_env(g: dict, rank: int, local: int, per_node: int, world: int, node_index: int) -> dict:
    values = {"rank": rank, "local_rank": local, "world": world, "local_world": per_node, "node_rank": node_index}
    return {var: str(values[concept]) for concept, names in g["trace"].get("env", {}).items() for var in names}


def inherited(g: dict, opts: dict, env) -> dict:
    """The job's variables a launcher reads as its options (the trace block's `env_options`: srun's
    SLURM_NTASKS is -n), where its command line gives no option of that kind (tasks, or devices)."""
    devices = g["trace"].get("devices") or {}
    device_options = {devices.get("per_task"), devices.get("total"), *devices.get("per_node", ())}
    read = g["trace"].get("env_options", {})
    kinds = (device_options, set(read.values()) - device_options)
    blocked = set().union(*(kind for kind in kinds if kind & set(opts)))
    found = {option: [env[var]] for var, option in read.items() if env.get(var) and option not in blocked}
    return {**found, **opts}


def bound_devices(g: dict, opts: dict, local: int, nodes: int, per_node: int = 1) -> dict:
    """The devices a task sees where the launch asks for GPUs (the trace block's `devices`): its own N
    with a per-task count (srun --gpus-per-task=N), else the step's per node, shared by the node's tasks
    (--gpus-per-node, --gres=gpu:N, --gpus over the nodes, flux's -g per slot), unless a binding option
    picks the task's (`bind`: gpu_bind below). Nothing asked: the job's, inherited."""
    devices = (g["trace"] or {}).get("devices")
    if not devices:
        return {}
    each = number(last(opts, devices["per_task"])) if devices.get("per_task") else None
    slot = number(last(opts, devices["per_slot"])) if devices.get("per_slot") else None
    first = local * each if each else 0
    shared = next(((gres_gpus if name == "gres" else number)(last(opts, name)) for name in devices["per_node"]
                   if last(opts, name)), None) or (slot and slot * per_node)
    total = number(last(opts, devices["total"])) if devices.get("total") else None
    count = each or shared or (total and -(-total // max(nodes, 1)))
    if not count:
        return {}
    listed = [str(first + i) for i in range(count)]
    if not each and devices.get("bind"):
        listed = gpu_bind(listed, opts.get(devices["bind"], []), local, per_node)
    return dict.fromkeys(devices["env"], ",".join(listed))


def gpu_bind(listed: list, words: list, local: int, per_node: int) -> list:
    """The node's GPUs that a binding option gives its task `local`, the last form it knows winning.
    srun --gpu-bind (srun(1), https://slurm.schedmd.com/srun.html, read 2026-11-29): single:N, the
    (local // N)-th GPU; map_gpu:LIST, LIST's entry for the task, the list reused from its start;
    per_task:N, N GPUs of its own. Flux's -o gpu-affinity=per-task (flux-shell-options(7), read
    2026-11-28): the shell's GPUs split evenly among its tasks. Others (srun's closest, mask_gpu;
    flux's default `on`, every task the shell's GPUs) leave the list."""
    for word in reversed([str(w) for w in words]):
        mode, _, value = word.rpartition("verbose,")[2].replace("=", ":", 1).partition(":")
        if mode == "single" and number(value):
            return [listed[min(local // number(value), len(listed) - 1)]]
        if mode == "map_gpu" and value:
            ids = value.split(",")
            return [ids[local % len(ids)]]
        if mode == "per_task" and number(value):
            return listed[local * number(value):(local + 1) * number(value)] or listed[-number(value):]
        if mode == "gpu-affinity" and value == "per-task":
            share = max(len(listed) // max(per_node, 1), 1)
            return listed[local * share:(local + 1) * share] or listed[-share:]
    return listed


def listed_devices(g: dict, settings: dict) -> dict:
    """A per-node launcher's device list option (accelerate --gpu_ids 1,2; `all` keeps every device)."""
    devices = (g["trace"] or {}).get("devices") or {}
    listed = settings.get(devices.get("list", ""))
    return dict.fromkeys(devices["env"], str(listed)) if listed and str(listed) != "all" else {}


def set_devices(g: dict, opts: dict, local: int) -> dict:
    """jsrun -g N: the tasks of one resource set (-a per set) share its N devices, the node's sets in turn."""
    rs = (g["trace"] or {}).get("resource_set")
    each = number(last(opts, rs["gpus"])) if rs else None
    if not each:
        return {}
    first = local // (number(last(opts, rs["tasks"])) or 1) * each
    return {"CUDA_VISIBLE_DEVICES": ",".join(str(first + i) for i in range(each))}


def set_devices_per_node(g: dict, opts: dict, per_node: int) -> int | None:
    """The devices a node's resource sets are bound to: a node holds at least those (jsrun -r 6 -g 1: six)."""
    last_bound = set_devices(g, opts, per_node - 1).get("CUDA_VISIBLE_DEVICES")
    return int(last_bound.split(",")[-1]) + 1 if last_bound else None


def visible_devices(env, node_devices: int) -> int:
    """torch.cuda.device_count() in `env`: the listed devices where a visibility variable is set, else the node's."""
    listed = visible_list(env)
    return node_devices if listed is None else len(listed)


def hostfile_slots(path: str) -> int | None:
    """The slots of a host file: `host slots=N` (Open MPI's mpirun(1) "hostfile", read 2026-11-29) or
    `host:N` (MPICH Hydra's), else one a line (PBS's node file lists a host once per slot)."""
    try:
        lines = [line.split("#")[0].split() for line in Path(path).read_text().splitlines()]
    except OSError:
        return None
    total = 0
    for words in filter(None, lines):
        given = [w.split("=", 1)[1] for w in words[1:] if w.startswith("slots=")] or words[0].split(":")[1:]
        total += number(given[0]) or 1 if given else 1
    return total or None


def worker_command(name: str, opts: dict, command: list) -> list:
    if "no_python" in opts:
        return command
    if "module" in opts:
        return ["python", "-m", *command]
    return ["python", *command]


def rendezvous_host(settings: dict) -> str | None:
    endpoint = settings.get("rdzv_endpoint")
    return endpoint.rsplit(":", 1)[0] if endpoint else None


def config_settings(opts: dict) -> dict:
    """Top-level `key: value` lines of an accelerate config file inside the checkout (the trace
    needs only its process counts and precision; nested blocks are read by their keys too)."""
    path = last(opts, "config_file")
    settings = {}
    try:
        lines = Path(path).read_text().splitlines() if path else []
    except OSError:
        return settings
    for line in lines:
        key, sep, value = line.strip().partition(":")
        if sep and value.strip():
            settings[key.strip()] = value.strip().strip("'\"")
    return settings
