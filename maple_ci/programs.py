"""What a port must know about the program it launches, read from the program's own arguments.

Megatron-LM (and Megatron-DeepSpeed, NeMo, torchtitan) splits each model replica over tensor x
pipeline (x context) parallel ranks; the rest of the world is data parallel. A port changes the
world size and keeps those flags, so the world size must stay a multiple of the model-parallel
group, and the global batch size a multiple of data-parallel size x micro batch size.
Lightning's Trainer(devices=, num_nodes=) must equal the ranks per node and the node count.
The port checks these and says what to change (the source scheduler's job variables in them are
translated before, by schedulers/jobvars.py). It rewrites only arguments whose meaning is documented:
Lightning's Trainer devices and num_nodes in Hydra's spelling (NeMo: `trainer.devices=8`, also with
`+`/`++`) and LightningCLI's (`--trainer.devices 8`), which must equal the port's ranks per node and
nodes. Other arguments that hold the source's node shape (`--devices 4`, `--num_gpus 4`, `--nproc 4`,
`--num-nodes 16`) are the program's to define: the header names them (shape_arguments).
"""

import math
import re
from typing import Optional

# Argument names as normalised by _sizes (no dashes or prefix like "model." or "parallelism.",
# "_" read as "-"): Megatron's flags, NeMo's Hydra keys, torchtitan's degrees.
_MODEL_PARALLEL = {
    "tensor": ("tensor-model-parallel-size", "tensor-parallel-degree"),
    "pipeline": ("pipeline-model-parallel-size", "pipeline-parallel-degree"),
    "context": ("context-parallel-size", "context-parallel-degree"),
}
_BATCH = {"global": "global-batch-size", "micro": "micro-batch-size"}
# LightningCLI (--trainer.devices), Hydra (trainer.devices=4) and plain argparse spellings.
_LIGHTNING = {"devices": ("devices", "gpus"), "nodes": ("num-nodes",)}
_OPTION = re.compile(r"(?:--)?(?:[\w-]+\.)*([\w-]+)")


# `pwd` and $(pwd) print $PWD (POSIX pwd: the shell's working directory, the logical path): the
# port carries them as that expansion rather than running a command substitution from the user's script.
_PWD_SUBSTITUTION = re.compile(r"`pwd`|\$\(pwd\)")


def carried(word: str) -> str:
    """A source word as the port writes it: `pwd` and $(pwd) as ${PWD}."""
    return _PWD_SUBSTITUTION.sub("${PWD}", word)


def _sizes(args: list[str]) -> dict[str, int]:
    """Every `--name N`, `--name=N` or `prefix.name=N` in args whose value is a positive integer,
    by normalised name; a later one wins, as in argparse. Values like $TP are not known here."""
    found = {}
    for i, word in enumerate(args):
        name, equals, value = word.partition("=")
        if not equals:
            if not word.startswith("--") or i + 1 >= len(args):
                continue
            value = args[i + 1]
        match = _OPTION.fullmatch(name)
        if match and value.isdigit() and int(value) > 0:
            found[match.group(1).replace("_", "-")] = int(value)
    return found


def _first(sizes: dict[str, int], names: tuple[str, ...]) -> Optional[int]:
    return next((sizes[n] for n in names if n in sizes), None)


def model_parallel(args: list[str]) -> dict[str, int]:
    """The program's model-parallel sizes above 1, e.g. {"tensor": 2, "pipeline": 2}."""
    sizes = _sizes(args)
    found = {kind: _first(sizes, names) for kind, names in _MODEL_PARALLEL.items()}
    return {kind: size for kind, size in found.items() if size and size > 1}


def describe(parallel: dict[str, int]) -> str:
    """"tensor 2 x pipeline 2 = 4" (or "tensor 2" alone)."""
    text = " x ".join(f"{kind} {size}" for kind, size in parallel.items())
    return f"{text} = {math.prod(parallel.values())}" if len(parallel) > 1 else text


def nodes_that_fit(nodes: int, devices_per_node: int, group: int) -> int:
    """The smallest node count >= nodes whose world size is a multiple of `group`."""
    step = group // math.gcd(group, devices_per_node)
    return -(-nodes // step) * step


def program_notes(args: list[str], framework: str, nodes: Optional[int], ranks_per_node: int) -> list[str]:
    """Header notes about the program's own parallelism and device arguments on the target."""
    notes = []
    world = nodes * ranks_per_node if isinstance(nodes, int) else None
    parallel = model_parallel(args)
    group = math.prod(parallel.values())
    if parallel and world is None:
        notes.append(f"the program's parallel sizes are kept ({describe(parallel)}): choose a node count whose "
                     f"{ranks_per_node} ranks per node make a multiple of {group}")
    elif parallel and world % group == 0:
        data = world // group
        notes.append(f"the program's parallel sizes are kept ({describe(parallel)}): {world} ranks give data "
                     f"parallel size {data}")
        sizes = _sizes(args)
        total, micro = sizes.get(_BATCH["global"]), sizes.get(_BATCH["micro"], 1)
        if total and total % (data * micro):
            notes.append(f"global batch size {total} is not a multiple of data parallel size {data} x micro batch "
                         f"size {micro} = {data * micro}; Megatron refuses that: use a multiple of {data * micro}")
    if framework == "lightning":
        notes.append(_lightning_note(args, nodes, ranks_per_node))
    return notes


def _lightning_note(args: list[str], nodes: Optional[int], ranks_per_node: int) -> str:
    nodes_text = str(nodes) if isinstance(nodes, int) else "the allocation's node count"
    note = (f"Lightning's Trainer(devices=..., num_nodes=...) must be {ranks_per_node} and {nodes_text} here "
            "(one rank per device, started by the scheduler, no torchrun)")
    sizes = _sizes(args)
    devices, given_nodes = (_first(sizes, names) for names in _LIGHTNING.values())
    wrong = [f"devices {devices}"] if devices not in (None, ranks_per_node) else []
    if given_nodes is not None and isinstance(nodes, int) and given_nodes != nodes:
        wrong.append(f"num_nodes {given_nodes}")
    if wrong:
        note += f"; the script's arguments give {' and '.join(wrong)}, left as written: change them"
    return note


# Lightning's Trainer arguments in Hydra's (+trainer.devices=8) and LightningCLI's (--trainer.devices 8)
# spellings: `gpus` is Lightning 1.x's name for devices.
_TRAINER = re.compile(r"(?:\+{0,2}|--)trainer\.(devices|gpus|num_nodes)")
_TRAINER_KIND = {"devices": "per_node", "gpus": "per_node", "num_nodes": "nodes"}
# Names (normalised as _sizes does) that usually hold the node shape, whose meaning is the program's.
_SHAPE_NAMES = {"per_node": ("devices", "gpus", "ngpus", "num-gpus", "n-gpus", "gpus-per-node", "nproc",
                             "nproc-per-node", "num-devices", "devices-per-node"),
                "nodes": ("num-nodes", "nnodes", "nodes", "n-nodes"), "world": ("world-size",)}
_SHAPE_KIND = {name: kind for kind, names in _SHAPE_NAMES.items() for name in names}
_KIND_TEXT = {"per_node": "ranks per node", "nodes": "nodes", "world": "ranks in all"}


def _shape(nodes: Optional[int], per_node: Optional[int]) -> dict[str, Optional[int]]:
    world = nodes * per_node if nodes and per_node else None
    return {"per_node": per_node, "nodes": nodes, "world": world}


def _shape_words(args: list[str]):
    """(index of the value's word, the option as written, normalised name, value) of each sizing argument."""
    for i, word in enumerate(args):
        name, equals, value = word.partition("=")
        if not equals:
            if not word.startswith("--") or i + 1 >= len(args):
                continue
            value, at = args[i + 1], i + 1
        else:
            at = i
        match = _OPTION.fullmatch(name.lstrip("+"))  # Hydra's +key= adds, ++key= forces
        if match and value.isdigit():
            yield at, name, match.group(1).replace("_", "-"), int(value)


def shape_arguments(args: list[str], source: tuple, port: tuple) -> tuple[list[str], list[str]]:
    """(the program's arguments for the port, header notes): Lightning's Trainer sizes set to the
    port's shape; other arguments equal to the source's shape that the port changes, named.
    `source` and `port` are (nodes, ranks per node); a port's nodes is None when chosen at submit time."""
    want, had = _shape(*port), _shape(*source)
    out, notes = list(args), []
    for at, written, name, value in _shape_words(args):
        trainer = _TRAINER.fullmatch(written)
        kind = _TRAINER_KIND[trainer.group(1)] if trainer else _SHAPE_KIND.get(name)
        if kind is None or want[kind] in (None, value):
            continue
        if trainer:
            out[at] = f"{written}={want[kind]}" if "=" in out[at] else str(want[kind])
            notes.append(f"Lightning's {written} is set to the port's {_KIND_TEXT[kind]}: {value} -> {want[kind]}")
        elif value == had[kind]:
            notes.append(f"the program's argument {written} {value} is the source's {_KIND_TEXT[kind]}; the port has "
                         f"{want[kind]}: change it to {want[kind]} if it sizes the job (left as written)")
    return out, notes


def ranks_per_node(nodes: Optional[int], world: Optional[int], devices: Optional[int]) -> Optional[int]:
    """A job's ranks per node: its world over its nodes where that divides, else its devices per node."""
    return world // nodes if world and nodes and world % nodes == 0 else devices


def port_arguments(intent, nodes: Optional[int], per_node: int) -> tuple[list[str], list[str]]:
    """shape_arguments for a port of `intent` to `nodes` (None: chosen at submit time) x per_node ranks."""
    source = (intent.nodes, ranks_per_node(intent.nodes, intent.world_size, intent.gpus_per_node))
    return shape_arguments(intent.script_args, source, (nodes, per_node))


def relabelled(args: list[str], label: dict, back) -> list[str]:
    """A labelled source's arguments (label: its nodes, world_size, gpus_per_node) as the port read
    back (`back`) must pass them: Lightning's Trainer sizes at the port's shape, as shape_arguments
    sets them; a label without nodes has its size chosen at submit time, as has its port."""
    source = (label["nodes"], ranks_per_node(label["nodes"], label.get("world_size"), label.get("gpus_per_node")))
    port = (back.nodes if label["nodes"] else None, ranks_per_node(back.nodes, back.world_size, back.gpus_per_node))
    return shape_arguments(args, source, port)[0]
