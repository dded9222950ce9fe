"""The scheduler options a center submits a verification with, derived from the committed script's
own directives: only what shapes the allocation, nodes and time capped by the site, then the
site's own options (account, QOS). A trigger never names them."""

import re

from maple_ci.extract import pbs_walltime, slurm_walltime

SAFE_VALUE = re.compile(r"[A-Za-z0-9_.,:=+-]+")  # no spaces, quotes or paths in a scheduler option
# Slurm options taken from the script (aliases -> long name); everything else is dropped.
SLURM_KEPT = {"-N": "nodes", "-t": "time", "-n": "ntasks", "-c": "cpus-per-task", "-G": "gpus", "-C": "constraint",
              "-p": "partition", "-J": "job-name", **{name: name for name in (
                  "nodes", "time", "ntasks", "ntasks-per-node", "cpus-per-task", "gpus", "gpus-per-node",
                  "gpus-per-task", "gres", "constraint", "partition", "job-name", "gpu-bind", "exclusive")}}
SLURM_FLAGS = {"exclusive"}
PBS_KEPT_RESOURCES = {"place", "filesystems"}
# One chunk of a PBS select: `[N:]resource=value[:resource=value...]` (PBS Professional Reference
# Guide, "select", https://help.altair.com/2022.1.0/PBS%20Professional/PBSReferenceGuide2022.1.pdf, read 2026-11-25)
PBS_CHUNK = re.compile(r"(?:(\d+)(?::|$))?((?:[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.-]+(?::|$))*)")


def _directives(text: str) -> tuple[str, list[str]]:
    """The scheduler ('slurm' or 'pbs') and the words of its directives before the first command."""
    kind, words = "slurm", []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("#SBATCH", "#PBS")):
            kind = "slurm" if stripped.startswith("#SBATCH") else "pbs"
            words += stripped.split("#", 2)[1].split()[1:]  # drop the prefix and any trailing comment
        elif stripped and not stripped.startswith("#"):
            break  # like sbatch and qsub, directives after the first command are ignored
    return kind, words


def _option_pairs(words: list[str]):
    """(name, value) for `--name=value`, `--name value`, `-X value` and `-Xvalue`; value None for a flag."""
    words = list(words)
    while words:
        word = words.pop(0)
        if word.startswith("--"):
            name, _, value = word[2:].partition("=")
            if not value and name not in SLURM_FLAGS and words and not words[0].startswith("-"):
                value = words.pop(0)
            yield name, value or None
        elif word.startswith("-") and len(word) >= 2:
            value = word[2:] or (words.pop(0) if words and not words[0].startswith("-") else None)
            yield word[:2], value


def _first_number(value: str) -> int:
    match = re.match(r"\d+", value or "")
    return int(match[0]) if match else 1


def pbs_select(value: str, max_nodes: int) -> str:
    """A PBS select statement with its chunks' total capped at max_nodes (the last chunks give way
    first): `1:ngpus=4+511:ncpus=64` is 512 chunks, not 1. ValueError for one that is not chunks."""
    chunks = []
    for chunk in value.split("+"):
        match = PBS_CHUNK.fullmatch(chunk)
        if not chunk or not match or not (match[1] or match[2]):
            raise ValueError(f"PBS select chunk {chunk!r} is not [N:]resource=value[:...]")
        chunks.append([int(match[1] or 1), match[2].rstrip(":")])
    excess = sum(count for count, _ in chunks) - max_nodes
    for chunk in reversed(chunks):
        cut = min(excess, chunk[0] - (1 if chunk is chunks[0] else 0))
        chunk[0], excess = chunk[0] - max(cut, 0), excess - max(cut, 0)
    return "+".join(f"{count}:{resources}".rstrip(":") for count, resources in chunks if count)


def scheduler_parameters(text: str, max_nodes: int, max_minutes: int, site_options: str) -> tuple[str, list[str]]:
    """SCHEDULER_PARAMETERS from the script's directives: only options that shape the allocation,
    nodes and time capped, then the site's own options (account, QOS); and what was dropped."""
    kind, words = _directives(text)
    cap_seconds, kept, dropped = max_minutes * 60, [], []
    nodes, seconds, select = 1, cap_seconds, "1"
    for name, value in _option_pairs(words):
        if kind == "pbs" and name == "-l" and value:
            for resource in value.split(","):
                key, _, amount = resource.partition("=")
                if key == "select":
                    select = pbs_select(amount, max_nodes)
                elif key == "walltime":
                    seconds = _seconds(pbs_walltime, amount, cap_seconds)
                elif key in PBS_KEPT_RESOURCES and SAFE_VALUE.fullmatch(amount):
                    kept.append(resource)
                else:
                    dropped.append(f"-l {key}")
            continue
        long = SLURM_KEPT.get(name) if kind == "slurm" else None
        if long == "nodes":
            nodes = _first_number(value)
        elif long == "time":
            seconds = _seconds(slurm_walltime, value, cap_seconds)
        elif long in SLURM_FLAGS and value is None:
            kept.append(f"--{long}")
        elif long and value and SAFE_VALUE.fullmatch(value):
            kept.append(f"--{long}={value}")
        else:
            dropped.append(name if name.startswith("-") else f"--{name}")
    seconds = min(seconds, cap_seconds)
    walltime = f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
    if kind == "pbs":
        kept = [f"-l select={select}", f"-l walltime={walltime}", *(f"-l {r}" for r in kept)]
    else:
        kept[:0] = [f"--nodes={min(nodes, max_nodes)}", f"--time={walltime}"]
    return " ".join([*kept, *site_options.split()]), dropped


def _seconds(parse, value: str, unlimited: int) -> int:
    try:
        walltime = parse(value or "")
    except ValueError:
        return unlimited
    if walltime is None:
        return unlimited
    hours, minutes, seconds = (int(part) for part in walltime.split(":"))
    return hours * 3600 + minutes * 60 + seconds
