"""Ranked candidate fixes for one failure, and the advice when none is an edit of the script.

Every exact known case contributes its alternatives (kb.Fix) whose precondition holds on the
script, in the knowledge base's rank order, with the values the log gave (named groups) and the
cluster's facts. A value neither gives, if it is a site value a person can look up (an account, a
partition's limit, the GPU flag), becomes a <name> placeholder with the command that finds it.
"""

import logging
import re
from typing import NamedTuple, Optional

from .. import schedulers
from ..errors import MapleError
from .diagnosis import Advice, Candidate
from .edits import apply_fix, fields_of, fields_of_text, resolve
from .kb import Fix, Match
from .logs import Failure
from .policy import log_value_refusal

# Why a known fix was not offered, with its rule id and the knowledge base's patterns, goes to this log;
# a user reads only the reason in words (an escaped regex is no text for a person: issue 28).
_log = logging.getLogger(__name__)

# Site values a fix may need and how to find them: each scheduler unit lists its own commands
# (Scheduler.site_queries); these are the ones that are the same under every scheduler.
SITE_VALUES = {
    "framework_module": "module spider pytorch",
    "prerequisite": "module spider <module>/<version>",
    # Interfaces as ip(8) lists them; loopback, container bridges and veth pairs are node-local.
    "socket_ifname": "ip -o -4 addr show  (the interface every node has: not lo, docker0, br-*, virbr*, veth*)",
    "cache_dir": "a directory with free space you can write from the job: echo $SCRATCH; df -h $SCRATCH",
    "bind_path": "DIR:PATH, a writable directory (mkdir -p $SCRATCH/cache) onto the read-only path the error names",
    "cuda_module": "module spider cuda  (the CUDA toolkit module, no newer than nvidia-smi's CUDA version)",
    "slots": "the GPUs of the node or allocation: nvidia-smi -L | wc -l (or rocm-smi)",
    "ib_hca": "ibv_devinfo | grep -e hca_id -e link_layer  (the HCAs of one link layer, e.g. mlx5_0,mlx5_1)",
    "mem_per_cpu": "the memory per node the job asked for (--mem) divided by the CPUs it uses on a node; what it used: sacct -j <jobid> -o MaxRSS",
}


def _scheduler(script: str, log: str, context: dict) -> str:
    """The cluster's scheduler, else the one whose directives the script uses, else the one whose
    submit command the log names (qsub: ...), else Slurm."""
    unit = schedulers.find(context.get("scheduler")) or schedulers.detect(script) or schedulers.mentioned(log)
    return unit.name if unit else "slurm"


def _find_command(name: str, scheduler: str) -> Optional[str]:
    unit = schedulers.find(scheduler)
    return (unit.site_queries.get(name) if unit else None) or SITE_VALUES.get(name)


def _captured(m: re.Match) -> dict[str, str]:
    return {k: v for k, v in m.groupdict().items() if v is not None}


_FROM_LOG = re.compile(r"\{\{(\w+)\}\}")  # {{name}} in a script pattern: the value the message gave


def _with_log_values(pattern: str, found: dict[str, str]) -> Optional[str]:
    """The pattern with each {{name}} replaced by the message's value, literally; None if it gave none."""
    if any(name not in found for name in _FROM_LOG.findall(pattern)):
        return None
    return _FROM_LOG.sub(lambda m: re.escape(found[m[1]]), pattern)


def _precondition(fix: Fix, script: str, log: str, found: dict[str, str]) -> tuple[Optional[dict], str]:
    """The values the `requires` regexes capture from the script, or None and why the fix does not
    apply: a script pattern it needs or must not have, or a message it holds (or does not hold) for.
    A script pattern may name a value of the message ({{resource}}: the resource qsub refused)."""
    groups: dict[str, str] = {}
    for pattern in fix.requires:
        filled = _with_log_values(pattern, found)
        m = re.search(filled, script, re.MULTILINE) if filled else None
        if not m:
            _log.info("the script has nothing matching %r", pattern)
            return None, "the script has no line it edits"
        groups |= _captured(m)
    for pattern in fix.unless:
        if re.search(pattern, script, re.MULTILINE):
            _log.info("the script already has %r", pattern)
            return None, "the script already has what it adds"
    if not all(re.search(p, log, re.MULTILINE) for p in fix.log_requires):
        return None, "the message is not the one it fixes"
    if any(re.search(p, log, re.MULTILINE) for p in fix.log_unless):
        return None, "the message names another cause"
    return groups, ""


def _fill_site_values(fix: Fix, values: dict, scheduler: str) -> tuple[dict, dict[str, str], list[str]]:
    """values with a <name> placeholder for each site value the fix needs and nobody gave; the
    commands that find them; and the names of other missing values (the fix cannot be offered)."""
    missing = sorted({name for op in fix.ops for name in fields_of(op)} - values.keys())
    find = {n: command for n in missing if (command := _find_command(n, scheduler))}
    unknown = [n for n in missing if n not in find]
    return values | {n: f"<{n}>" for n in find}, find, unknown


def _log_values_refusal(fix: Fix, logged: dict[str, str], from_script: dict[str, str]) -> Optional[str]:
    """Why a value the log gave may not fill one of the fix's fields (policy.log_value_refusal); the
    script's own values (from_script) win over the log's, so only the log's that are used are checked."""
    used = {name for op in fix.ops for name in fields_of(op)} & (logged.keys() - from_script.keys())
    return next((why for name in sorted(used) if (why := log_value_refusal(name, logged[name]))), None)


_TARGETS = ("name", "flag", "launcher")  # what an op edits: a placeholder there is no edit yet


class _Offer(NamedTuple):
    candidate: Optional[Candidate] = None
    reason: str = ""  # why it is not offered
    lookups: Optional[dict] = None  # the site values that decide which option the edit writes


def _offer(m: Match, fix: Fix, script: str, log: str, context: dict, scheduler: str) -> _Offer:
    """One alternative of a known case as a candidate, or why it is not one."""
    groups, why = _precondition(fix, script, log, m.groups)
    if groups is None:
        return _declined(m.entry.id, why)
    if why := _log_values_refusal(fix, m.groups, groups):
        return _declined(m.entry.id, f"{why}; it is not put into the script")
    values, find, unknown = _fill_site_values(fix, context | m.groups | groups, scheduler)
    if unknown:
        return _declined(m.entry.id, f"the fix needs {', '.join(unknown)}, which neither the log nor "
                                     "the cluster profile gives")  # fmt: skip
    if any(n in find for op in fix.ops for k, v in op if k in _TARGETS for n in fields_of_text(v)):
        return _Offer(lookups=find)  # which option to write is itself the site's: say how to find it
    try:
        patched = apply_fix(script, fix.ops, values)
    except MapleError as exc:
        return _declined(m.entry.id, str(exc))
    explanation = " ".join(filter(None, [m.entry.explanation, fix.explanation]))
    ops = [resolve(op, values) for op in fix.ops]
    return _Offer(Candidate(entry_id=m.entry.id, explanation=explanation, ops=ops, find=find, script=patched,
                            workaround=fix.workaround, cause=fix.cause))  # fmt: skip


def _declined(entry_id: str, why: str) -> _Offer:
    """A fix not offered: why, in words; the rule's id in the log."""
    _log.info("%s: %s", entry_id, why)
    return _Offer(reason=why)


def _offers(m: Match, script: str, log: str, context: dict, scheduler: str) -> list[_Offer]:
    """Every alternative of one known case, offered or with the reason it is not."""
    if m.entry.scheduler and m.entry.scheduler != scheduler:
        return [_declined(m.entry.id, f"its fix is for {m.entry.scheduler} clusters")]
    return [_offer(m, fix, script, log, context, scheduler) for fix in m.entry.alternatives]


def candidates(script: str, log: str, exact: list[Match], context: dict) -> tuple[list[Candidate], list[str], dict]:
    """The candidate fixes of the exact matches, best first; why the others were not offered; and
    the site values to look up for a fix whose very option is the site's (the GPU request syntax)."""
    scheduler = _scheduler(script, log, context)
    found, reasons, seen, lookups = [], [], {script}, {}
    offers = [offer for m in exact for offer in _offers(m, script, log, context, scheduler)]
    for offer in offers:
        lookups |= offer.lookups or {}
        new = offer.candidate
        if new and new.script in seen:  # the script as it is, or another candidate's
            offer = _declined(new.entry_id, "its fix changes nothing (already applied or not relevant)")
        reasons += [offer.reason] if offer.reason else []
        if offer.candidate:
            seen.add(new.script)
            found.append(new)
    return found, reasons, lookups


# ---------------------------------------------------------------------------------------------
# Advice when the answer is not (only) an edit


def _infrastructure(exact: list[Match]) -> str:
    if exact and exact[0].entry.advice:  # the entry's own words, which may name a script change
        return exact[0].entry.advice
    node = next((m.groups["node"] for m in exact if "node" in m.groups), None)
    explanation = exact[0].entry.explanation if exact else ""
    where = f" on {node}" if node else ""
    exclude = f" If it fails again there, keep the job off that node: #SBATCH --exclude={node}." if node else ""
    advice = f"Hardware or system failure{where}: not a problem with the script. Resubmit it.{exclude}"
    return f"{advice} {explanation} If it happens again, tell the center (job id, node, this line).".strip()


_ANY_POLICY = "wait until your running jobs finish, or cancel one"


def _limit_advice(scheduler: str) -> str:
    unit = schedulers.find(scheduler)
    return (unit.limit_advice if unit else "") or _ANY_POLICY
# A traceback frame; the user's own is the last one outside installed packages and the interpreter.
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')
_LIBRARY = re.compile(r"site-packages|dist-packages|/lib/python\d|^<frozen")


def program_line(failure: Failure) -> Optional[str]:
    """path:line of the innermost traceback frame in the user's own code, if the log shows one."""
    frames = [m for line in failure.window for m in _FRAME.finditer(line) if not _LIBRARY.search(m["path"])]
    return f"{frames[-1]['path']}:{frames[-1]['line']}" if frames else None


def _lookup_text(find: dict) -> str:
    return "; ".join(f"{name}: {command}" for name, command in find.items())


def _fix_advice(found: list[Candidate]) -> Advice:
    top = found[0]
    if top.find:
        return Advice(kind="site_value", text=f"{top.explanation} Fill in the value(s) this site needs ({_lookup_text(top.find)}).")
    return Advice(kind="fix", text=top.explanation)


def _kind_advice(kind: Optional[str], first, failure: Failure, scheduler: str) -> Optional[Advice]:
    """The advice an exact case's outcome names when no edit is offered (None: it names none); the
    entry's own advice, where it has one, says what to do in its own words."""
    if kind and first.advice:
        return Advice(kind=kind, text=f"{first.explanation} {first.advice}")
    if kind == "policy":
        return Advice(kind="policy", text=f"{first.explanation} A limit, not an error in the script: {_limit_advice(scheduler)}.")
    if kind == "user_code":
        where = program_line(failure)
        at = f" The error is raised in your program at {where}." if where else ""
        return Advice(kind="user_code", text=f"{first.explanation}{at} Not a problem of the launch script.")
    if kind == "environment":
        return Advice(kind="environment", text=first.explanation)
    return None


def _outside_script(failure: Failure, exact: list[Match], found: list[Candidate], kind: Optional[str]) -> Optional[Advice]:
    """The advice when the cause is outside the script: a workaround edit's, or infrastructure."""
    first = exact[0].entry if exact else None
    if first and first.outcome and found and found[0].workaround:  # the edit avoids a cause elsewhere
        return Advice(kind=first.outcome, text=f"{found[0].explanation} (A workaround: the cause is outside the script.)")
    # An entry whose outcome (not category) is infrastructure: only when none of its fixes applies.
    if failure.category == "infrastructure" or (kind == "infrastructure" and not found):
        return Advice(kind="infrastructure", text=_infrastructure(exact))
    return None


def advise(failure: Failure, exact: list[Match], found: list[Candidate], reasons: list[str], lookups: dict,
           script: str, log: str, context: dict) -> Advice:  # fmt: skip
    """What to do: the kind an exact case names first, else a fix or a value to fill in."""
    first = exact[0].entry if exact else None
    kind = first.advice_kind if first else None
    outside = _outside_script(failure, exact, found, kind)
    if outside:
        return outside
    if found:
        return _fix_advice(found)
    if lookups:
        return Advice(kind="site_value", text=f"{first.explanation} This site's values decide the edit; find them with: {_lookup_text(lookups)}.")
    advice = _kind_advice(kind, first, failure, _scheduler(script, log, context))
    return advice or Advice(kind="none", text=_no_fix(failure, first, reasons))


def _no_fix(failure: Failure, first, reasons: list[str]) -> str:
    """What is known when no edit applies: the known case's explanation and why its fixes do not fit."""
    where = f"line {failure.line_no}: {failure.line.strip()}"
    if not first:
        return f"{where} — no known case matches this error"
    why = "; ".join(dict.fromkeys(reasons)) or "it has no edit of the script"
    return f"{where} — {first.explanation} No known edit applies here ({why})."
