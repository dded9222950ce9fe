"""The scheduler registry: each scheduler is one unit (slurm.py, pbs.py, ...) that owns reading and
writing its directives, its walltime forms, its job variables and its submit and cancel commands.
Every other module asks the registry; none names a scheduler. Adding one is adding its module here
(see docs/extending.md, "A scheduler"): every module of this package but base and jobvars is loaded."""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Optional, Sequence, Union

from ..errors import MapleError
from .base import Directives, Option, Scheduler

__all__ = ["Directives", "Option", "Scheduler", "all", "by_submit", "by_variable", "detect", "find", "from_log", "get", "implied", "late", "mentioned",
           "names", "register"]

_UNITS: dict[str, Scheduler] = {}
_NOT_UNITS = {"base", "jobvars"}


def register(unit: Scheduler) -> Scheduler:
    _UNITS[unit.name] = unit
    return unit


# Registered first: the schedulers a bare submit command names (`qsub` is PBS's before Cobalt's and Grid Engine's).
_FIRST = ("slurm", "pbs")


def _load() -> None:
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda module: module.name not in _FIRST):
        if module.name not in _NOT_UNITS and not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


def all() -> list[Scheduler]:  # noqa: A001 - the registry's own word, as schedulers.all()
    return list(_UNITS.values())


def names() -> tuple[str, ...]:
    return tuple(_UNITS)


def find(name: Optional[str]) -> Optional[Scheduler]:
    return _UNITS.get(name or "")


def get(name: str) -> Scheduler:
    unit = _UNITS.get(name)
    if unit is None:
        raise MapleError(f"no scheduler {name!r}; known: {', '.join(_UNITS)}")
    return unit


def detect(text: str) -> Optional[Scheduler]:
    """The scheduler whose directive comes first before the first command, or None; a dialect (NEC
    NQSV's #PBS) before the scheduler whose prefix it shares, where its own options claim the block."""
    firsts = [(block[0][0], unit) for unit in _UNITS.values() if (block := unit.block(text))]
    return min(firsts, key=lambda first: (first[0], first[1].dialect_of is None))[1] if firsts else None


def late(text: str) -> Optional[tuple[Scheduler, int]]:
    """For a script whose directives are all after its first command (none of them read): the scheduler
    they are written for, with the first one's line. A dialect (NQSV) needs its options read to be told."""
    for lineno, line in enumerate(text.splitlines(), 1):
        unit = next((unit for unit in _UNITS.values() if not unit.dialect_of and unit.after_prefix(line.strip()) is not None), None)
        if unit is not None:
            return unit, lineno
    return None


def by_submit(command: Union[str, Sequence[str]]) -> Optional[Scheduler]:
    """The scheduler whose submit command a command line starts with: its words (`["flux", "batch",
    "-N2", "job.sh"]`, `["/usr/bin/sbatch", "job.sh"]`) or its first word alone (`"qsub"`). Flux's
    is two words: `flux run` is no submit line."""
    words = [command] if isinstance(command, str) else list(command)
    if not words:
        return None
    words[0] = words[0].rsplit("/", 1)[-1]
    return next((unit for unit in _UNITS.values() if tuple(words[: len(unit.submit)]) == tuple(unit.submit)), None)


def from_log(text: str) -> Optional[Scheduler]:
    """The scheduler whose own error lines (qsub: ..., sbatch: error: ...) a job log holds first."""
    found = [(m.start(), unit) for unit in _UNITS.values() for pattern in unit.error_patterns
             if (m := re.search(pattern, text, re.M))]
    return min(found, key=lambda first: first[0])[1] if found else None


def by_variable(name: str) -> Optional[Scheduler]:
    """The scheduler whose job sets the variable `name` (SLURM_NNODES, PBS_O_WORKDIR)."""
    return next((unit for unit in _UNITS.values() if unit.owns_variable(name)), None)


def implied(text: str, launcher: Optional[str]) -> Optional[Scheduler]:
    """For a script without directives: the scheduler its launcher belongs to (srun), else the one
    whose job variables it reads first ($SLURM_NNODES, ${PBS_NODEFILE})."""
    unit = next((unit for unit in _UNITS.values() if launcher in unit.launchers), None)
    if unit is not None:
        return unit
    found = [(m.start(), unit) for unit in _UNITS.values()
             if (m := re.search(rf"\$\{{?{re.escape(unit.var_prefix)}", text))]
    return min(found, key=lambda first: first[0])[1] if found else None


def mentioned(words: str) -> Optional[Scheduler]:
    """The scheduler a request's words name first, by its name or its submit command (sbatch, qsub)."""
    found = [(m.start(), unit) for unit in _UNITS.values()
             if (m := re.search(rf"\b(?:{re.escape(unit.name)}|{re.escape(unit.submit[0])})\b", words, re.I))]
    return min(found, key=lambda first: first[0])[1] if found else None


_load()
