"""`maple cluster discover`: a cluster profile written from what a login node's own commands say.

Parsers (slurm, pbs, flux, lsf, modules, node) are pure functions from a query's text to Facts;
discover() asks the queries (probe.py), profile.py writes the profile. Every fact names the query it
came from; one no query answered is unconfirmed and names the query that would say.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..errors import MapleError
from .probe import command_line

Probe = Callable[[str], Optional[str]]


@dataclass(frozen=True)
class Fact:
    value: Any
    command: str  # the query it came from, or the one that would determine it
    confirmed: bool = True


def told(value: Any, key: str) -> Fact:
    """A fact the query `key` said."""
    return Fact(value, command_line(key))


def unconfirmed(value: Any, key: str) -> Fact:
    """A value no query confirmed (a default, or a guess from a name); `key`'s query would say."""
    return Fact(value, command_line(key), confirmed=False)


@dataclass(frozen=True)
class NodeShape:
    """One kind of compute node as a scheduler lists it."""

    gpus: int
    gpu_type: str  # the scheduler's name for the GPU (Slurm GRES type, PBS gpu_model), "" if none
    cores: int
    cpus: int  # what the scheduler counts (hardware threads where it counts those)
    queues: tuple[str, ...] = ()
    arch: str = ""
    cores_known: bool = True  # PBS counts only CPUs (hardware threads on Polaris), never cores


def gpu_shape(shapes: list[NodeShape]) -> Optional[NodeShape]:
    """The most common GPU node kind (ties: the larger GPU count), or None without GPU nodes."""
    counts = Counter(shape for shape in shapes if shape.gpus > 0)
    if not counts:
        return None
    return max(counts, key=lambda shape: (counts[shape], shape.gpus))


SCHEDULERS = ("slurm", "pbs", "flux", "lsf")
# The queries whose answer shows the scheduler is there; the first scheduler with one names it.
PRESENCE = {"flux": ("flux_resources", "flux_queues"), "slurm": ("slurm_partitions", "slurm_nodes"),
            "pbs": ("pbs_queues", "pbs_nodes"), "lsf": ("lsf_queues", "lsf_hosts")}


def scheduler_facts(probe: Probe) -> tuple[str, dict[str, Fact]]:
    from . import flux, lsf, pbs, slurm

    readers = {"slurm": slurm.facts, "pbs": pbs.facts, "flux": flux.facts, "lsf": lsf.facts}
    for name in ("flux", "slurm", "pbs", "lsf"):  # Flux first: LLNL runs it inside Slurm allocations too
        answered = next((key for key in PRESENCE[name] if probe(key) is not None), None)
        if answered:
            facts = readers[name](probe)
            facts["scheduler"] = Fact(name, command_line(answered))
            return name, facts
    raise MapleError("no scheduler answered here (scontrol, qstat, flux, bqueues): "
                     "run `maple cluster discover` on the cluster's login node")


def discover(probe: Probe) -> dict[str, Fact]:
    """Every fact the queries give: the scheduler's, then the node's software and hardware."""
    from . import modules, node

    _, facts = scheduler_facts(probe)
    facts.update(modules.facts(probe))
    facts.update(node.facts(probe, facts))
    return facts
