"""Which machine a script was written for, and the evidence, for the port to show. A machine is named
only where evidence that names it alone (a profile's `signatures`: its host names, its partitions or
queues, its file systems, its name) outweighs every other machine's; evidence several machines share
(templates/machines.yaml `shared`: a centre's /p file systems, its module stages) counts for each of
them and so never tells them apart; and evidence of a machine maple has no profile for (`unprofiled`:
JURECA-DC's dc-gpu partition) names that machine, so the source cluster is unknown, never the nearest
profile. A tie names none."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

from ..data_cache import load_yaml
from ..intent import without_record
from ..schedulers import Directives
from ..paths import templates_dir
from ..profile_files import cluster_data
from .. import schedulers

_BLANK_LINES = re.compile(r"\n[ \t\r\n]*\n")  # a signature's `^\s*` runs over blank lines from every line start


@dataclass
class _Machine:
    name: str
    display: str
    profiled: bool
    own: list = field(default_factory=list)  # evidence that names this machine alone, as written
    shared: list = field(default_factory=list)  # evidence it shares with other machines

    def score(self) -> int:
        return len(self.own) + len(self.shared)


@dataclass
class Identity:
    cluster: Optional[str]  # a profiled machine, or None
    note: Optional[str]  # the evidence, for the port's header; None when there is none


@lru_cache(maxsize=1)
def _machines_data() -> dict:
    return load_yaml(templates_dir() / "machines.yaml")


def _found(pattern: str, text: str) -> Optional[str]:
    """The text the pattern finds, to the end of its word (`--environment=v` reads `--environment=vllm071`)."""
    m = re.search(pattern, text, re.I)
    if not m:
        return None
    found = m.group(0).strip().split("\n")[0]
    rest = "" if m.group(0)[-1:].isspace() else re.match(r"[^\s\"';)]*", text[m.end():]).group(0)
    return (found + rest).strip()


def _candidates(text: str, scheduler: Optional[str], asked: int) -> dict[str, _Machine]:
    """Every machine whose scheduler is the script's and whose nodes hold the devices it asks per node,
    with its own evidence."""
    rows = [(name, data.get("display_name") or name, True, data) for name, data in cluster_data().items()]
    rows += [(name, data["display"], False, data) for name, data in _machines_data()["unprofiled"].items()]
    machines = {}
    for name, display, profiled, data in rows:
        if scheduler and data.get("scheduler") not in (None, scheduler):
            continue
        if asked > (data.get("devices_per_node") or asked):
            continue
        own = [hit for pattern in data.get("signatures", ()) if (hit := _found(pattern, text))]
        machines[name] = _Machine(name, display, profiled, own)
    return machines


def identify(text: str, gpus_asked_per_node: int = 0) -> Identity:
    """The machine the script's evidence names (see the module's docstring). A script whose directives
    are one scheduler's comes from no machine that runs another (`#$` is not ABCI 3.0's PBS), nor from
    one whose nodes have fewer devices than the directives ask of each node."""
    text = _BLANK_LINES.sub("\n", without_record(text.replace("\r\n", "\n")))
    written_for = schedulers.detect(text)
    machines = _candidates(text, written_for.name if written_for else None, gpus_asked_per_node)
    for row in _machines_data()["shared"]:
        hit = _found(row["pattern"], text)
        for name in row["machines"] if hit else ():
            if name in machines:
                machines[name].shared.append(f"`{hit}` ({row['what']})")
    ranked = sorted((m for m in machines.values() if m.score()), key=lambda m: -m.score())
    if not ranked:
        return Identity(None, None)
    best = ranked[0]
    tied = [m for m in ranked if m.score() == best.score()]
    if len(tied) > 1 or not best.own:
        names = ", ".join(m.display for m in tied)
        return Identity(None, f"source cluster not named: the evidence ({_evidence(best)}) fits {names} alike")
    if not best.profiled:
        return Identity(None, f"written for {best.display}, which maple has no profile for ({_evidence(best)}): "
                              "its source cluster is left unknown")
    return Identity(best.name, f"source cluster {best.display}, from {_evidence(best)}")


def _evidence(machine: _Machine) -> str:
    return ", ".join([*(f"`{_without_prefix(hit)}`" for hit in machine.own), *machine.shared])


def _without_prefix(hit: str) -> str:
    """A directive's option without its prefix (`--constraint=gpu`, not `#SBATCH --constraint=gpu`): a port's
    header holds no other scheduler's directive text."""
    for unit in schedulers.all():
        rest = unit.after_prefix(hit)
        if rest is not None:
            return rest.strip()
    return hit


def job_scheduler(text: str, d: Directives, launcher: Optional[str], notes: list[str]) -> str:
    """The scheduler the job is written for: its directives', else the one its launcher or its job
    variables belong to (srun, $PBS_NODEFILE), else the one whose directives it writes after its first
    command, where the scheduler reads none of them (sbatch(1): "before any executable commands"), said
    in `notes`."""
    if d.scheduler != "none":
        return d.scheduler
    implied = schedulers.implied(text, launcher)
    if implied:
        return implied.name
    late = schedulers.late(text)
    if late is None:
        return "none"
    unit, line = late
    notes.append(f"the {unit.prefix} lines (from line {line}) come after the script's first command, where "
                 f"{unit.submit[0]} stops reading directives: none of them applies, and the port takes none of "
                 "them (the job ran with the scheduler's defaults)")
    return unit.name
