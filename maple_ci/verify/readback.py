"""The read-back gate: a port must run what its source ran.

The generated script is read by the same reader that read the source (maple_ci.extract) and
compared with the source's intent after the port's deliberate decisions, which come from the
synthesizer's own rule (synthesize.resolve_job: ranks per node, world size, one node for one
process) and the template it used. What is compared:

  program        the entrypoint the launch line runs
  arguments      the program's arguments, word for word
  process model  one process / one launcher per node / one rank per device, as the source started it
  ranks          ranks per node and ranks per device, as the port's rule decided
  world size     the ranks the launch line starts against the ranks the port asked for
  environment    the rendezvous variables the source gave its program (MASTER_ADDR, RANK, ...)

Any other difference is a failing check that names it: a port never says "ok" while its launch
line runs something else. A port whose size cannot be read back gets a warning, not a pass.

`maple port` writes the gate's inputs into each port's header (record.py: the source's intent with
the user's options, the target, the template, the source's rendezvous variables), so `maple verify`
runs the same gate on the port as it stands, edits included, before any job.
"""

import re
from typing import Optional

from ..extract import RENDEZVOUS_VARS, extract_script
from ..intent import JobIntent
from ..library import TemplateMeta
from ..process_model import (ONE_PROCESS, PER_NODE_LAUNCHERS, forced_change, model_given, process_model, same_model,
                             template_model)
from ..profiles import ClusterProfile
from ..programs import carried, port_arguments
from ..synthesize import deepspeed_notes, resolve_job
from .static import Check

def rendezvous_given(script: str, intent: JobIntent) -> set[str]:
    """Rendezvous variables the job hands its program: all of them under a per-node launcher (torchrun's
    contract, deepspeed's and accelerate's too), else those the script itself assigns (NAME=...,
    export NAME=..., --env NAME=..., -x NAME); a file it sources is not read, so a source that sets
    them there asks nothing of the port."""
    if intent.launcher in PER_NODE_LAUNCHERS:
        return {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))
    return {name for name in RENDEZVOUS_VARS
            if re.search(rf"(?:^|[\s;'\"(,=]){name}=|(?:-x|--env|-env|--genv|-genv)\s+{name}\b", code)}


def _ranks_per_node(intent: JobIntent) -> Optional[int]:
    """Ranks the launch line starts on a node: its processes over its nodes where both read back
    and divide, one where fewer processes than nodes start (one process of a job holding two nodes);
    the directives' GPU count says what a node has, not what the launch starts."""
    processes = intent.processes()
    if processes and intent.nodes and processes < intent.nodes:
        return 1
    if processes and intent.nodes and processes % intent.nodes == 0:
        return processes // intent.nodes
    return intent.gpus_per_node


def _ranks_per_device(intent: JobIntent) -> float:
    """More than 1 only where the launch starts more ranks than the devices it binds them to."""
    processes = intent.processes()
    if processes and intent.nodes and intent.gpus_per_node:
        return max(1.0, processes / (intent.nodes * intent.gpus_per_node))
    return 1.0


def _check(name: str, problem: Optional[str], fine: str, severity: str = "error") -> Check:
    if problem:
        return Check(name=f"readback:{name}", ok=False, severity=severity, message=problem)
    return Check(name=f"readback:{name}", ok=True, message=fine)


def _program(back: JobIntent, intent: JobIntent) -> Check:
    problem = None if back.entrypoint in (intent.entrypoint, carried(intent.entrypoint or "")) else (
        f"the port runs {back.entrypoint!r}, the source runs {intent.entrypoint!r}")
    return _check("program", problem, f"runs {intent.entrypoint}")


_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))")


def as_port_reads(word: str, env: dict[str, str]) -> str:
    """A source word with the variables the port sets put in, as the reader does on the port
    (the source's `$TMPDIR/x` reads `/tmp/x` on a target that exports TMPDIR=/tmp)."""
    word = _VARIABLE.sub(lambda m: env.get(m.group(1) or m.group(2), m.group(0)), word)
    # inside $(( )) a name is read bare (`$((NNODES * 4))`, a translated job variable)
    return _ARITHMETIC.sub(lambda m: "$((" + _NAME.sub(lambda n: env.get(n.group(0), n.group(0)), m.group(1)) + "))", word)


_ARITHMETIC = re.compile(r"\$\(\((.*)\)\)")
_NAME = re.compile(r"(?<![$\w])[A-Za-z_]\w*")


def _arguments(back: JobIntent, intent: JobIntent, template: TemplateMeta, want: list[str]) -> Check:
    """The source's arguments word for word (`want`: with the Trainer sizes the port sets and says so,
    programs.port_arguments), and the --deepspeed_config the port adds (and says so) where a DeepSpeed
    program's arguments name none (synthesize.deepspeed_notes)."""
    got = back.script_args
    if deepspeed_notes(intent, template) and got[len(want):len(want) + 1] == ["--deepspeed_config"]:
        got = got[:len(want)] + got[len(want) + 2:]
    problem = None
    if got != want and [as_port_reads(carried(word), back.env) for word in want] != got:
        index = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
        source = repr(want[index]) if index < len(want) else "nothing"
        port = repr(got[index]) if index < len(got) else "nothing"
        problem = (f"the program's arguments differ from the source's at argument {index + 1}: the source passes "
                   f"{source}, the port {port} (source: {want}, port: {got})")
    return _check("arguments", problem, f"the source's {len(want)} argument(s), word for word")


def _model(back: JobIntent, intent: JobIntent, template: TemplateMeta) -> Check:
    """The source's model, or the one the target forces (process_model.py: the header says so)."""
    source, got = process_model(intent), process_model(back)
    forced = forced_change(intent, template)
    want = forced or source
    kept = got == forced if forced else same_model(back, intent) or not model_given(intent)
    problem = None if kept else (
        f"process model changed: the source starts {source} ({intent.launcher}), the port {got} ({back.launcher})")
    why = "a change the port's rule makes (the header says so)" if forced else "as the source"
    return _check("process-model", problem, f"{want}, {why}")


def _size(back: JobIntent, intent: JobIntent, per_node: int, world: Optional[int]) -> list[Check]:
    """Ranks per node, ranks per device and world size against what the port's rule decided;
    world is None when the size comes from the allocation at submit time."""
    ranks = _ranks_per_node(back)
    if ranks is None:
        return [_check("ranks", "cannot read the ranks per node back from the launch line", "", "warning")]
    checks = [_check("ranks", None if ranks == per_node else (
        f"the launch line starts {ranks} ranks per node, the port decided {per_node}"), f"{per_node} ranks per node")]
    source_rpd, port_rpd = _ranks_per_device(intent), _ranks_per_device(back)
    if source_rpd != port_rpd:
        checks.append(_check("ranks-per-device", f"the source runs {source_rpd:g} rank(s) per device, the port "
                                                 f"{port_rpd:g}", ""))
    if world is not None:
        checks.append(_check("world-size", None if back.processes() == world else (
            f"the launch line starts {back.processes()} ranks in all, the port asked for {world}"),
            f"{world} ranks in all, as asked"))
    return checks


def _environment(script: str, back: JobIntent, given) -> Optional[Check]:
    """given: the rendezvous variables the source gives its program, None when not known."""
    if given is None:
        return None
    missing = sorted(set(given) - rendezvous_given(script, back))
    problem = (f"the source gives its program {', '.join(missing)}; the port does not set "
               f"{'it' if len(missing) == 1 else 'them'}") if missing else None
    return _check("environment", problem, "the program gets the rendezvous variables the source gave it")


def readback_checks(script: str, intent: JobIntent, profile: ClusterProfile, template: TemplateMeta,
                    source_text: Optional[str] = None, rendezvous: Optional[frozenset[str]] = None) -> list[Check]:
    """The gate's checks of `script`, ported from `intent` with `template`; source_text (the source
    script, when there is one) adds the environment check, and so does `rendezvous`, the variables
    the source gives its program, where a port's record holds them instead of the source."""
    back = extract_script(script)
    job = resolve_job(intent, profile, template)
    # A one-process template starts one process whatever nodes the job holds.
    world = 1 if template_model(template) == ONE_PROCESS else None if job.from_allocation else job.world_size
    want = port_arguments(intent, None if job.from_allocation else job.nodes, job.gpus_per_node)[0]
    checks = [_program(back, intent), _arguments(back, intent, template, want), _model(back, intent, template),
              *_size(back, intent, job.gpus_per_node, world)]
    given = rendezvous_given(source_text, intent) if source_text is not None else rendezvous
    if env := _environment(script, back, given):
        checks.append(env)
    return checks
