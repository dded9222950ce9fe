"""The job variables Slurm and PBS set, and what each is in the other's job (issue 16, cause 6).

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

from ..errors import MapleError

# Each concept and the variables that hold it; sources (read 2026-11-25):
#   Slurm: https://slurm.schedmd.com/sbatch.html#SECTION_OUTPUT-ENVIRONMENT-VARIABLES
#   PBS Pro/OpenPBS: https://help.altair.com/2022.1.0/PBS%20Professional/PBSReferenceGuide2022.1.pdf (qsub, environment)
#   Torque's PBS_NUM_NODES/PBS_NUM_PPN/PBS_NP: https://docs.adaptivecomputing.com/torque/ (qsub, exported variables)
#   PBS_JOBSIZE is not PBS's: ALCF's ezpz helpers set it to the node count (github.com/saforem2/ezpz, unconfirmed elsewhere)
_CONCEPTS = {
    "submit_dir": {"slurm": ["SLURM_SUBMIT_DIR"], "pbs": ["PBS_O_WORKDIR"]},
    "job_id": {"slurm": ["SLURM_JOB_ID", "SLURM_JOBID"], "pbs": ["PBS_JOBID"]},
    "job_name": {"slurm": ["SLURM_JOB_NAME"], "pbs": ["PBS_JOBNAME"]},
    "array_index": {"slurm": ["SLURM_ARRAY_TASK_ID"], "pbs": ["PBS_ARRAY_INDEX"]},
    "nodes": {"slurm": ["SLURM_NNODES", "SLURM_JOB_NUM_NODES"], "pbs": ["PBS_JOBSIZE", "PBS_NUM_NODES"]},
    "ranks": {"slurm": ["SLURM_NTASKS", "SLURM_NPROCS"], "pbs": ["PBS_NP"]},
    "ranks_per_node": {"slurm": ["SLURM_NTASKS_PER_NODE", "SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE"],
                       "pbs": ["PBS_NUM_PPN"]},
}
_PREFIX = {"slurm": "SLURM_", "pbs": "PBS_"}
_SET_BY_HELPERS = {"PBS_JOBSIZE"}  # named like PBS's but set by site helpers: no PBS job has it by itself
_REFERENCE = re.compile(r"\$\{((?:SLURM|PBS)_[A-Z0-9_]+)\}|\$((?:SLURM|PBS)_[A-Z0-9_]+)\b|\b((?:SLURM|PBS)_[A-Z0-9_]+)\b")


def _target_value(concept: str, target: str, per_node: int) -> str:
    """The target's word for `concept`: a variable name, or arithmetic over the port's $NNODES."""
    if concept == "nodes":
        return "NNODES"
    if concept == "ranks":
        return f"(NNODES * {per_node})"
    if concept == "ranks_per_node":
        return str(per_node)
    return _CONCEPTS[concept][target][0]


def _concept_of(name: str):
    return next((concept for concept, names in _CONCEPTS.items() for found in names.values() if name in found), None)


def translate(word: str, target: str, per_node: int) -> str:
    """`word` with every job variable of the other scheduler replaced by the target's equivalent;
    MapleError naming those that have none."""
    missing = []

    def replace(match: re.Match) -> str:
        braced, plain, bare = match.groups()
        name = braced or plain or bare
        if name.startswith(_PREFIX[target]) and name not in _SET_BY_HELPERS:
            return match.group(0)
        concept = _concept_of(name)
        if concept is None:
            missing.append(name)
            return match.group(0)
        value = _target_value(concept, target, per_node)
        if bare:  # inside $(( )): a name or a number
            return value
        if value.startswith("("):
            return f"$({value})"
        return value if value.isdigit() else f"${{{value}}}" if braced else f"${value}"

    translated = _REFERENCE.sub(replace, word)
    if missing:
        raise MapleError(f"{word!r} reads {', '.join(sorted(set(missing)))}, which a {target} job does not set and "
                         "has no equivalent for: give the program's value yourself (--entrypoint / --program-args)")
    return translated


def on_scheduler(intent, target: str, per_node: int):
    """`intent` with its program path and arguments read on `target`'s job (see `translate`)."""
    entrypoint = translate(intent.entrypoint, target, per_node) if intent.entrypoint else intent.entrypoint
    return replace(intent, entrypoint=entrypoint, script_args=[translate(arg, target, per_node) for arg in intent.script_args])
