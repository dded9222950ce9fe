"""The emulated allocation a trace runs on: node names, devices and cores per node, and the job
variables the scheduler sets for a batch job of that shape. Each variable comes from the scheduler
unit's own table (Scheduler.job_vars, by concept): nothing here names a scheduler."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Optional

from .. import schedulers
from ..schedulers import arrays
from ..launchers import grammar as _grammar
from ..launchers import launcher as _launcher
from ..launchers import names as launcher_names

DEFAULT_NODES = 2  # a size left to submit time is traced on two nodes, so per-node differences show
DEFAULT_GPUS = 4
DEFAULT_CPUS = 64
# The storage variables centers set in every login and job environment (NERSC $SCRATCH/$PSCRATCH/$CFS,
# TACC $WORK/$SCRATCH, JSC $PROJECT/$SCRATCH, IDRIS $STORE/$WORK): the same stand-in value on every
# trace, so that `set -u` scripts run and source and port expand them alike.
# CINECA_SCRATCH: Leonardo's (templates/clusters/leonardo.yaml's notes; docs.hpc.cineca.it, unconfirmed).
SITE_VARS = ("SCRATCH", "PSCRATCH", "WORK", "STORE", "PROJECT", "CFS", "FASTDATA", "DATA", "WORKDIR", "CINECA_SCRATCH")


@dataclass
class Allocation:
    scheduler: str
    nodes: list
    gpus_per_node: int
    cpus_per_node: int
    ntasks: Optional[int] = None
    ntasks_per_node: Optional[int] = None
    cpus_per_task: Optional[int] = None
    node_file_var: Optional[str] = None
    tasks_per_node_var: Optional[str] = None
    array: Optional[str] = None  # the job array's index set (Slurm's form): the trace is of its first task
    job_gpus: Optional[int] = None  # the GPUs per node the job asks for (None: none asked; a site may give all)
    gpus_per_task: Optional[int] = None
    gpus_assumed: bool = False  # nothing gave the devices per node: a launch that binds more (jsrun -r 6 -g 1) says

    def as_data(self) -> dict:
        return {**asdict(self), "addresses": {n: f"192.0.2.{i + 1}" for i, n in enumerate(self.nodes)}}

    def job_env(self, submit_dir: str, job_name: str, home: str) -> dict:
        """Every job variable of the scheduler's table that a job of this shape has, by concept."""
        unit = schedulers.find(self.scheduler)
        site = {name: f"/site/{name.lower()}" for name in SITE_VARS}
        if unit is None:
            return {**site, "MAPLE_TRACE_JOB_NODES": ",".join(self.nodes)}
        values = {"submit_dir": submit_dir, "job_id": "424242", "job_name": job_name,
                  "nodes": str(len(self.nodes)), "node_list": ",".join(self.nodes), "node_file": f"{home}/nodefile",
                  "ranks": self.ntasks and str(self.ntasks), "ranks_per_node": self.ntasks_per_node and str(self.ntasks_per_node),
                  "cpus_per_task": self.cpus_per_task and str(self.cpus_per_task),
                  "cpus": str(self.cpus_per_node * len(self.nodes)), "gpus": str(self.gpus_per_node * len(self.nodes)),
                  "cpus_on_node": str(self.cpus_per_node), "node_cpus": str(self.cpus_per_node), **self._array_values()}
        env = {name: values[concept] for concept, names in unit.job_vars.items()
               for name in names if values.get(concept)}
        env.update(unit.device_env(self.job_gpus, self.gpus_per_task), **unit.batch_task)
        env = {name: value for name, value in env.items() if value is not None}
        return {**site, **env, "MAPLE_TRACE_JOB_NODES": ",".join(self.nodes)}

    def _array_values(self) -> dict:
        """The first task of the array: its index, and the set's count, first and last index."""
        fixed = arrays.constants(self.array)
        return {**fixed, "array_index": fixed["array_min"], "array_job_id": "424242"} if fixed else {}


def allocation_for(text: str, cluster: Optional[str], nodes: Optional[int], gpus: Optional[int] = None) -> Allocation:
    """The allocation the script's directives ask for (or `gpus` per node where they say none, as a
    SkyPilot task's accelerators), on `cluster`'s nodes when one is named."""
    unit = schedulers.detect(text)
    d = unit.read(text, strict=False) if unit else schedulers.Directives()
    unit = unit or schedulers.implied(text, None)  # no directives: the job whose variables it reads ($PBS_NODEFILE)
    assumed = not (d.gpus_per_node or gpus or cluster)
    gpus, cpus = d.gpus_per_node or gpus or DEFAULT_GPUS, DEFAULT_CPUS
    if cluster:
        from ..profiles import get_profile

        profile = get_profile(cluster)
        gpus, cpus = profile.devices_per_node, profile.cpus_per_node
        unit = unit or schedulers.find(profile.scheduler)
    d = d.on_nodes_of(cpus, gpus)  # job-wide totals on nodes of this shape, as the scheduler places them (Gadi's ngpus)
    count = nodes or d.nodes or (d.spreads and nodes_filled(d, cpus, gpus)) or DEFAULT_NODES
    names = [f"n{i + 1:03d}" for i in range(count)]
    # sbatch(1), OUTPUT ENVIRONMENT VARIABLES (read 2026-11-29): SLURM_NTASKS is set from --ntasks, or
    # from --ntasks-per-node as the job's task count, also when the node count is left to submit time
    tasks = d.tasks() or (d.ntasks_per_node and d.ntasks_per_node * count)
    job_vars = unit.job_vars if unit else {}
    return Allocation(scheduler=unit.name if unit else "none", nodes=names, gpus_per_node=gpus, cpus_per_node=cpus,
                      ntasks=tasks, ntasks_per_node=d.ntasks_per_node, cpus_per_task=d.cpus_per_task,
                      node_file_var=(job_vars.get("node_file") or (None,))[0],
                      tasks_per_node_var=(job_vars.get("ranks_per_node") or (None,))[0] if d.ntasks_per_node else None,
                      array=arrays.from_dropped(d.dropped),
                      job_gpus=d.gpus_per_node and min(d.gpus_per_node, gpus) or _asked_at_submit(text, unit, gpus),
                      gpus_per_task=d.gpus_per_task, gpus_assumed=assumed)


def _asked_at_submit(text: str, unit, gpus: int) -> Optional[int]:
    """A job whose directives ask no GPUs but whose script reads a count only a GPU request sets
    (Slurm's SLURM_GPUS_ON_NODE: sbatch(1) OUTPUT ENVIRONMENT VARIABLES, "Number of GPUs allocated to
    the batch step", https://slurm.schedmd.com/sbatch.html, read 2026-11-29) was submitted asking for
    them (`sbatch --gpus-per-node=4 run.sh`): the trace gives it the node's devices."""
    counts = [name for name, value in (unit.device_env(2, None) if unit else {}).items() if value == "2"]
    return gpus if any(re.search(rf"\${{?{name}\b", text) for name in counts) else None


def nodes_filled(d, cpus: int, gpus: int) -> Optional[int]:
    """The nodes a task count with no node count takes: "enough nodes to satisfy the requested
    resources as expressed by ... -n, -c and --gpus" (sbatch(1) -N, https://slurm.schedmd.com/sbatch.html,
    read 2026-11-29; the local test cluster puts `sbatch -n 4` on 1 node); LSF's -n slots alike (unconfirmed)."""
    tasks = d.tasks()
    if not tasks:
        return None
    need_gpus = d.gpus or (d.gpus_per_task or 0) * tasks
    return max(-(-tasks * (d.cpus_per_task or 1) // cpus), -(-need_gpus // gpus) if need_gpus else 1)


@lru_cache(maxsize=1)
def grammars() -> dict:
    """The launcher registry as plain data for the stand-ins (which import no maple_ci)."""
    data = {}
    for name in launcher_names():
        entry, spec = _launcher(name), _grammar(name)
        data[name] = {"kind": entry.kind, "aliases": spec.aliases, "flags": sorted(spec.flags),
                      "values": sorted(spec.values), "pairs": sorted(spec.pairs), "value_default": spec.value_default,
                      "env_name_value": spec.env_name_value, "subcommands": sorted(spec.subcommands),
                      "ranks": {which: [list(n) for n in alts] for which, alts in entry.ranks}, "trace": entry.trace,
                      "behaviour": {option: var for option, var in entry.behaviour if var}}
    return data
