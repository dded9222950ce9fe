"""The job variables of one scheduler read as another's (issue 16, cause 6), for every pair of
registered schedulers: each unit lists its variables by concept (Scheduler.job_vars).

A program path or argument that reads the source scheduler's job variables
(`"${SLURM_SUBMIT_DIR}/multinode.py"`, `--nodes $SLURM_NNODES`,
`$((MBS*PBS_JOBSIZE*PPN/PP/TP))`) gets the target's equivalent, so the value is the same when the
port runs: the submit directory, the job id, the node count (every port sets $NNODES from its
allocation), the ranks. A variable with no equivalent stops the port with its name: an empty value
would run the program wrongly and silently. Arithmetic over them stays arithmetic, worked out at
run time on the target.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from typing import Optional

from ..errors import MapleError
from . import all as units, get
from .arrays import constants


@lru_cache(maxsize=1)
def _reference() -> re.Pattern:
    """$NAME, ${NAME} or a bare NAME (inside $(( ))) of any registered scheduler's variables."""
    prefixes = "|".join(re.escape(unit.var_prefix) for unit in units())
    listed = "|".join(re.escape(name) for unit in units() for names in unit.job_vars.values() for name in names
                      if name not in PROCESS_VARS)
    name = rf"(?:(?:{prefixes})[A-Z0-9_]+|(?:{listed})(?![A-Z0-9_]))"  # LSF's LS_SUBCWD has no LSB_ prefix
    return re.compile(rf"\$\{{({name})\}}|\$({name})\b|\b({name})\b")


# Names any process may carry outside a job: POSIX's TMPDIR ("a pathname of a directory made available
# for programs that need a place to create temporary files", XBD 8.3,
# https://pubs.opengroup.org/onlinepubs/9799919799/basedefs/V1_chap08.html, read 2026-11-29). A target's
# word for a concept (PBS's job TMPDIR), never read as the source's job variable.
PROCESS_VARS = frozenset({"TMPDIR"})

# Per-rank values a launcher sets in each rank (a node's index, a rank's on its node) and the batch
# shell lacks; that shell runs on the job's first node as its first task (srun(1), SLURM_NODEID), so a
# word it expands has 0 there, while a rank's own shell (`bash -c '...'`) has the launcher's value.
_BATCH_SHELL = {"node_index": "0", "local_rank": "0"}


def _concept_of(name: str) -> Optional[str]:
    return next((concept for unit in units() for concept, names in unit.job_vars.items() if name in names), None)


def _target_value(concept: str, target, per_node: int, array: Optional[str] = None) -> Optional[str]:
    """The target's word for `concept`: a variable name, arithmetic over the port's $NNODES, or the
    constant the job array's index set fixes (its count, first and last index: arrays.py)."""
    if concept == "nodes":
        return "NNODES"
    if concept == "ranks":
        return f"(NNODES * {per_node})"
    if concept == "ranks_per_node":
        return str(per_node)
    names = target.job_vars.get(concept)
    if names:
        return names[0]
    derived = _DERIVED.get(concept)
    on_node = target.job_vars.get(derived[0]) if derived else None
    return derived[1].format(on_node[0]) if on_node else constants(array).get(concept)


# The job's CPUs the target names no variable for, from its per-node count over the port's $NNODES
# (its nodes are alike); one node's CPUs under a site's name (Gadi's) as the target's own
_DERIVED = {"cpus": ("cpus_on_node", "({} * NNODES)"), "node_cpus": ("cpus_on_node", "{}")}


def _written(value: str, braced: bool, bare: bool, concept: Optional[str] = None) -> str:
    if bare:  # inside $(( )): a name or a number (an unset name is 0 there)
        return value
    if concept in _BATCH_SHELL and value.isidentifier():
        return f"${{{value}:-{_BATCH_SHELL[concept]}}}"
    if value.startswith("("):
        return f"$({value})"
    return value if value.isdigit() else f"${{{value}}}" if braced else f"${value}"


def translate(word: str, target: str, per_node: int, array: Optional[str] = None, had: Optional[int] = None) -> str:
    """`word` with every job variable of another scheduler replaced by the target's equivalent;
    MapleError naming those that have none. `had`, the source's ranks per node: where the port's
    differ, its own scheduler's per-node variables are written out too (see `on_scheduler`)."""
    unit, missing = get(target), []
    written_out = {"ranks_per_node"} if had not in (None, per_node) else set()

    def replace(match: re.Match) -> str:
        braced, plain, bare = match.groups()
        name = braced or plain or bare
        concept = _concept_of(name)
        if unit.owns_variable(name) and name not in unit.helper_vars and concept not in written_out:
            return match.group(0)
        value = _target_value(concept, unit, per_node, array) if concept else None
        if value is None:
            missing.append(name)
            return match.group(0)
        return _written(value, bool(braced), bool(bare), concept)

    translated = _reference().sub(replace, word)
    if missing:
        raise MapleError(f"{word!r} reads {', '.join(sorted(set(missing)))}, which a {target} job does not set and "
                         "has no equivalent for: give the program's value yourself (--entrypoint / --program-args)")
    return translated


def on_scheduler(intent, target: str, per_node: int):
    """`intent` with its program path and arguments read on `target`'s job (see `translate`). Where
    the port starts another count per node than the source, the ranks per node are written out as
    the port's, also where the target's scheduler has the source's variable: its job has it only if
    the port's directives ask for that count (sbatch(1), OUTPUT ENVIRONMENT VARIABLES:
    SLURM_NTASKS_PER_NODE "Only set if the --ntasks-per-node option is specified",
    https://slurm.schedmd.com/sbatch.html, read 2026-11-29), and the header names the change."""
    from ..programs import ranks_per_node

    array, had = intent.array, ranks_per_node(intent.nodes, intent.world_size, intent.gpus_per_node)
    entrypoint = translate(intent.entrypoint, target, per_node, array, had) if intent.entrypoint else intent.entrypoint
    args = [translate(arg, target, per_node, array, had) for arg in intent.script_args]
    notes = [f"the program's argument {was} ({had} in the source: its processes per node) is written {now}, the "
             f"port's {per_node} processes per node" for was, now in zip(intent.script_args, args)
             if was != now and had not in (None, per_node) and "ranks_per_node" in _concepts_in(was)]
    return replace(intent, entrypoint=entrypoint, script_args=args, notes=[*intent.notes, *notes])


def _concepts_in(word: str) -> set:
    return {_concept_of(next(name for name in match.groups() if name)) for match in _reference().finditer(word)}
