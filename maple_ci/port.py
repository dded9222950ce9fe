"""`maple port`: extract once, then retrieve -> synthesize -> static checks for each target.

Everything is computed in memory first; files are written only when every target was understood,
so a bad input or an unknown cluster changes nothing on disk.
"""

import re
from dataclasses import replace
import shlex
from pathlib import Path
from typing import Callable, Mapping, Optional

from pydantic import BaseModel, Field

from . import schedulers
from .containers import allowed
from .errors import MapleError
from .estimates import with_estimates
from .extract import extract, load_source
from .files import write_inside
from .intent import JobIntent
from .launchers import DL_LAUNCHERS, MPI_LAUNCHERS
from .profiles import ClusterProfile, get_profile
from .python_env import ALL, framework_env, with_python_env
from .retrieve import best_template
from .schedulers.arrays import refusal as array_refusal
from .schedulers.jobvars import on_scheduler
from .synthesize import output_path, render, require_port_facts, resolve_job
from .vendors import vendor_note
from .verify.record import make_record, with_record
from .verify.static import Check, checks_ok, static_checks


class PortResult(BaseModel):
    cluster: str
    status: str  # "ok" | "failed" (a static check failed) | "unsupported" (no script can run there)
    template: Optional[str] = None
    path: Optional[str] = None
    reason: str = ""
    checks: list[Check] = Field(default_factory=list)
    script: str = Field(default="", exclude=True)  # the generated text; the bot commits it


_SIZE = ("nodes", "gpus_per_node")


def apply_overrides(intent: JobIntent, **overrides) -> JobIntent:
    """Values the user gave as options win over what was extracted."""
    given = {key: value for key, value in overrides.items() if value is not None}
    if not given:
        return intent
    given |= _size_note(intent, given)
    if "account" in given:  # the user's own: a source's account stays only on its own cluster
        given["account_given"] = True
    if any(key in given for key in _SIZE):
        given["world_size"] = None  # recomputed from nodes * gpus_per_node
    intent = replace(intent, **given)  # checks the given values as JobIntent does
    return replace(intent, missing=[name for name in intent.missing if getattr(intent, name) is None]).with_defaults()


def _size_note(intent: JobIntent, given: dict) -> dict:
    """A size the user chose is theirs: the header says the change was asked for, not made by the port."""
    asked = [f"--{key.replace('_', '-')} {given[key]} (the script: {getattr(intent, key) or 'not set'})"
             for key in _SIZE if key in given and given[key] != getattr(intent, key)]
    return {"notes": [*intent.notes, f"the job size is what you asked for: {', '.join(asked)}"]} if asked else {}


# Slurm node-feature expressions (gpu&hbm80g, [a|b]*2): allowlisted, as they are written into a directive.
_CONSTRAINT = re.compile(r"[A-Za-z0-9_&|,:*\[\]!.-]+")


def _own_constraint(intent: JobIntent, profile: ClusterProfile) -> tuple[ClusterProfile, Optional[str]]:
    """On the source's own Slurm cluster, the source's node features (Perlmutter's gpu&hbm80g for
    the 80 GB nodes) replace the profile's --constraint: the center's own tuning stays."""
    if not intent.constraint or intent.source_cluster != profile.name or not schedulers.get(profile.scheduler).node_features:
        return profile, None
    if not _CONSTRAINT.fullmatch(intent.constraint):
        return profile, f"the source's constraint {intent.constraint!r} is not a plain feature expression; not kept"
    kept = [d for d in profile.directives if not d.startswith("--constraint=")]
    directives = [*kept, f"--constraint={intent.constraint}"]
    return profile.model_copy(update={"directives": directives}), None


def _for_target(intent: JobIntent, profile: ClusterProfile, python_envs: Mapping[str, str]):
    """(the profile with what this port adds to it: the user's Python environment, the source's own
    constraint on its own cluster; the intent with the header notes that depend on this target,
    among them what the program's code must change when it moves to another GPU vendor)."""
    # a source image runs only where the target allows it (containers.allowed); elsewhere the site's
    # set-up runs the program, and where that has no PyTorch (or not the program's framework) the
    # user's environment is needed
    in_image = intent.container is not None and bool(intent.container.image) and allowed(intent.container.image, profile)
    profile, framework_note = (profile, None) if in_image else framework_env(profile, intent.framework, python_envs)
    profile, env_note = with_python_env(profile, python_envs, intent.framework)
    profile, constraint_note = _own_constraint(intent, profile)
    notes = [note for note in (framework_note, None if in_image else env_note, constraint_note,
                               vendor_note(intent.source_cluster, profile)) if note]
    return profile, replace(intent, notes=[*intent.notes, *notes]) if notes else intent


def port_intent(intent: JobIntent, targets: list[str], source_name: str, out_dir: Path,
                progress: Callable[[str], None] = lambda message: None,
                python_envs: Mapping[str, str] = {}, source_text: Optional[str] = None,
                base_dir: Optional[Path] = None) -> list[PortResult]:
    """python_envs: the user's Python environment by cluster name (or "default" for every target),
    activated where the center provides none (python_env.py). source_text, the source script, lets
    the read-back gate also compare the variables the program is given. base_dir, the source's
    folder, is where the memory estimate reads the config files the program names."""
    from .skypilot import TARGET as TASK_TARGET  # a task file, not a cluster: port_task writes it

    clusters = [name for name in targets if name.strip().lower() != TASK_TARGET]
    profiles = [get_profile(name) for name in clusters]  # unknown clusters fail before any work
    if not targets:
        raise MapleError("no target cluster given; name at least one with --to")
    for name in set(python_envs) - {ALL}:
        get_profile(name)  # a misspelt cluster in --python-env CLUSTER=PATH must not pass silently
    require_port_facts(intent, source_name)  # before any target: a refusal changes nothing
    results = [port_task(intent, source_name, out_dir)] if len(clusters) < len(targets) else []
    for profile in profiles:
        profile, target_intent = _for_target(intent, profile, python_envs)
        progress(f"{profile.name}: retrieving a template")
        template = best_template(target_intent, profile.name)
        if not template.supported:
            results.append(PortResult(cluster=profile.name, status="unsupported", template=template.id, reason=template.reason))
            continue
        refused = array_refusal(target_intent.array, profile.scheduler, profile.display_name)
        if refused:  # a job array the target's scheduler has no form for: never an empty index
            results.append(PortResult(cluster=profile.name, status="unsupported", template=template.id, reason=refused))
            continue
        job = resolve_job(target_intent, profile, template, source_name)
        # the source scheduler's job variables in the program's path and arguments, as the target's
        # job has them ($SLURM_SUBMIT_DIR -> $PBS_O_WORKDIR), for the script and for its checks
        target_intent = on_scheduler(target_intent, profile.scheduler, job.gpus_per_node)
        target_intent = with_estimates(target_intent, profile, job, base_dir)  # header: memory fit, walltime
        progress(f"{profile.name}: rendering {template.id} and checking it")
        # the read-back gate's inputs, for `maple verify`, in the port's own header (verify/record.py)
        script = with_record(render(target_intent, profile, template, source_name, out_dir),
                             make_record(target_intent, profile.name, template.id, source_text))
        checks = static_checks(script, target_intent, profile, template, source_text)
        results.append(PortResult(
            cluster=profile.name,
            status="ok" if checks_ok(checks) else "failed",
            template=template.id,
            path=str(output_path(out_dir, profile, source_name)),
            checks=checks,
            script=script,
        ))
    return results


def port_task(intent: JobIntent, source_name: str, out_dir: Path) -> PortResult:
    """`--to skypilot`: a SkyPilot task running the source's program (skypilot.py), its GPUs named
    as the source cluster's are."""
    from .skypilot import SUFFIX, TARGET, schema_checks, sky_gpu, write_task

    gpu = sky_gpu(get_profile(intent.source_cluster).gpu_model) if intent.source_cluster else None
    name = Path(source_name).name.split(".")[0] or "task"
    task = write_task(intent, gpu, name)
    checks = schema_checks(task)
    return PortResult(cluster=TARGET, status="ok" if checks_ok(checks) else "failed", template="skypilot-task",
                      path=str(Path(out_dir) / TARGET / f"{name}.{SUFFIX}"), checks=checks, script=task)


def program_from_trace(intent: JobIntent, path: Path, trusted: bool) -> JobIntent:
    """Static reading found no program: the trace's rank 0 gives it (run in its sandbox, or anywhere
    with --trace, which is the user's word that the script is theirs)."""
    from .extract import program_line
    from .trace import traced_program

    found = traced_program(path, intent.source_cluster, trusted=trusted)
    if not found or not found.words:
        return intent
    entrypoint, args = program_line(shlex.join(found.words), None)
    note = f"the program was found by tracing the script (static reading found none): {shlex.join(found.words)[:200]}"
    kept = [n for n in intent.notes if not n.startswith("the program is not in the script")]  # now it is known
    # where the trace ran on the job's own node count (not its stand-in size for one left to submit time):
    # the launcher that started it (a registry name: the stand-ins are made from the registry) and its ranks,
    # together, so that the port's process note compares like with like
    launched = found.via and found.via[-1] in MPI_LAUNCHERS | DL_LAUNCHERS and found.world and found.nodes == intent.nodes
    launch = {"launcher": found.via[-1], "world_size": found.world} if launched else {}
    return replace(intent, entrypoint=entrypoint, script_args=args or [], notes=[*kept, note], **launch)


def write_results(results: list[PortResult], out_dir: Path) -> None:
    """Each port (executable, its read-back record in its header) under `out_dir`, through no
    symlink (files.write_inside): a checkout's planted link cannot redirect it outside it."""
    for result in results:
        if result.path:
            relative = Path(result.path).relative_to(out_dir)  # <cluster>/<name>, as output_path made it
            write_inside(out_dir, relative, result.script, 0o755)


def port(source: str, targets: list[str], out_dir: Path, *, progress: Callable[[str], None] = lambda message: None,
         python_envs: Mapping[str, str] = {}, trace: bool = False, **overrides) -> tuple[JobIntent, list[PortResult]]:
    name, text = load_source(source)
    progress(f"extracting the job intent from {name}")
    intent = apply_overrides(extract(text, name), **overrides)
    if intent.entrypoint is None and Path(source).is_file():
        intent = program_from_trace(intent, Path(source), trusted=trace)
    results = port_intent(intent, targets, name, out_dir, progress, python_envs, text,
                          Path(source).parent if Path(source).is_file() else None)
    if trace and Path(source).is_file():
        from .trace.compare import gate

        progress("tracing the source and each port")
        asked = [option for option, value in overrides.items() if value is not None]
        results = gate(source, results, trusted=True, cluster=intent.source_cluster, asked=asked,
                       gpus=intent.gpus_per_node)
    write_results(results, out_dir)
    return intent, results
