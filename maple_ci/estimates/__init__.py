"""Estimates a port's header gives about the job on its target: memory per device (memory.py) and
walltime (walltime.py), from what the job says (inputs.py). See docs/memory-and-walltime.md."""

from dataclasses import replace
from pathlib import Path
from typing import Optional

from ..intent import JobIntent
from ..profiles import ClusterProfile
from .inputs import read_workload
from .memory import memory_notes
from .walltime import walltime_notes


def with_estimates(intent: JobIntent, profile: ClusterProfile, job, base_dir: Optional[Path]) -> JobIntent:
    """`intent` with the header notes on memory fit and walltime for `job` (synthesize.Job) on
    `profile`; config files the program names are read from `base_dir`, inside its checkout."""
    work = read_workload(intent, base_dir)
    notes = memory_notes(work, intent.strategy, intent.framework, profile, job.nodes, job.world_size)
    notes += walltime_notes(intent.source_cluster, intent.walltime, intent.world_size, intent.gpus_per_node,
                            work.precision, profile, job)
    return replace(intent, notes=[*intent.notes, *notes]) if notes else intent
