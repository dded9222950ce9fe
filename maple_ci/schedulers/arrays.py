"""Job arrays carried in the target scheduler's form (issue 25): the source's index set, read from
its directive, written as the target's directive; the index variable is translated by concept
(jobvars.py: SLURM_ARRAY_TASK_ID <-> PBS_ARRAY_INDEX <-> LSB_JOBINDEX <-> SGE_TASK_ID) and the
count, first and last index, which only Slurm sets, become the constants the index set fixes.
A target with no array form refuses the port, naming it: the index is never an empty word.

The forms (each scheduler's manual, read 2026-11-29):
- Slurm sbatch --array=<indexes> (https://slurm.schedmd.com/job_array.html): ranges `0-31`, lists
  `1,3,5,7`, a step `1-7:2`, and `%N` for at most N tasks at once; SLURM_ARRAY_TASK_ID, _COUNT,
  _MIN and _MAX are set in each task.
- PBS Professional qsub -J X-Y[:Z][%max_subjobs] (PBS Professional Reference Guide, qsub, read in a
  copy of its option table; Altair's own page unconfirmed: X the first index, Y the upper bound, Z
  the step, indices >= 0; %max_subjobs the subjobs running at once): one range, PBS_ARRAY_INDEX in each subjob (https://docs.it4i.cz/general/job-arrays/); no
  list form.
- LSF bsub -J "name[start-end[:step],...]%N" (IBM LSF 10.1 bsub -J; LSB_JOBINDEX).
- Grid Engine qsub -t n[-m[:s]] (sge qsub(1); SGE_TASK_ID).
- Flux: flux batch has none (flux-core flux-submit(1): --cc=IDSET, with FLUX_JOB_CC, is an option
  of flux submit and bulksubmit only), so a port to Flux is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

# How each scheduler's directive names the array, as its unit lists it in Directives.dropped
_DIRECTIVE = re.compile(r"^(?:--array=|-a\s+|-J\s+|-t\s+)['\"]?(?:[\w.-]*\[)?([\d,:%\s-]+?)\]?(?:%(\d+))?['\"]?$")
_RANGE = re.compile(r"(\d+)(?:-(\d+)(?::(\d+))?)?")


@dataclass(frozen=True)
class IndexSet:
    ranges: tuple  # (first, last, step) each
    limit: Optional[int] = None  # tasks running at once

    @property
    def indices(self) -> list[int]:
        return sorted({i for first, last, step in self.ranges for i in range(first, last + 1, step)})

    def slurm(self) -> str:
        parts = [str(a) if a == b else f"{a}-{b}" + (f":{s}" if s != 1 else "") for a, b, s in self.ranges]
        return ",".join(parts) + (f"%{self.limit}" if self.limit else "")

    def pbs(self) -> Optional[str]:
        if len(self.ranges) != 1:
            return None
        first, last, step = self.ranges[0]
        return f"{first}-{last}" + (f":{step}" if step != 1 else "") + (f"%{self.limit}" if self.limit else "")


def parse(directive: str) -> Optional[IndexSet]:
    """The index set of a job array directive as a scheduler unit lists it (`--array=0-11%4`,
    `-J 1-9:2`, `-t 1-10`), or None when it is not one maple reads."""
    found = _DIRECTIVE.match(directive.strip())
    if not found:
        return None
    body, limit = found.group(1).replace(" ", ""), found.group(2)
    if "%" in body:
        body, limit = body.split("%", 1)
    ranges = []
    for part in body.split(","):
        match = _RANGE.fullmatch(part)
        if not match:
            return None
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        step = int(match.group(3) or 1)
        if last < first or step < 1:
            return None
        ranges.append((first, last, step))
    return IndexSet(tuple(ranges), int(limit) if limit else None)


def directive_value(array: str, scheduler: str) -> tuple[Optional[str], list[str]]:
    """(the target's array directive value, notes), for the canonical index set `array` (Slurm's
    form, as the intent keeps it); (None, [why]) when the target has no form for it."""
    found = parse(f"--array={array}")
    if found is None:
        return None, [f"the job array's index set {array!r} is not one maple reads"]
    if scheduler == "slurm":
        return found.slurm(), []
    if scheduler == "pbs":
        value = found.pbs()
        if value is None:
            return None, [f"PBS's -J takes one range X-Y[:Z], not the index list {array}"]
        fixed = constants(array)
        return value, [f"the job array is carried as -J {value}, each subjob's index in PBS_ARRAY_INDEX; Slurm's "
                       "SLURM_ARRAY_TASK_COUNT, _MIN and _MAX, which PBS does not set, are written as "
                       f"{fixed['array_count']}, {fixed['array_min']} and {fixed['array_max']} where the script read them"]
    return None, [f"{scheduler} jobs have no job array form maple writes (flux batch has none: --cc is "
                  "flux submit's)"]


def refusal(array: Optional[str], scheduler: str, display: str) -> Optional[str]:
    """Why a port of a job array to `scheduler` cannot be made, or None."""
    if not array:
        return None
    value, notes = directive_value(array, scheduler)
    if value is not None:
        return None
    return (f"the source is a job array ({array}) and {display} cannot carry it: {notes[0]}; submit the "
            "port once per index, with the index given to the program yourself")


def constants(array: Optional[str]) -> dict:
    """The array's count, first and last index (what Slurm's SLURM_ARRAY_TASK_COUNT/_MIN/_MAX hold),
    by concept, for targets whose jobs do not set them."""
    found = parse(f"--array={array}") if array else None
    if found is None:
        return {}
    indices = found.indices
    return {"array_count": str(len(indices)), "array_min": str(indices[0]), "array_max": str(indices[-1])}


def from_dropped(dropped: list[str]) -> Optional[str]:
    """The canonical (Slurm-form) index set of the first array directive among `dropped`."""
    for directive in dropped:
        found = parse(directive)
        if found is not None:
            return found.slurm()
    return None
