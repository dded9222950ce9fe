"""The debug agent: find the first real error in a job log, match it to known fixes, patch the script.

    locate(log)                 -> Failure | None   first error line, a window around it, a category
    match(failure, cluster)     -> [Match]          known cases: exact regex hits, then nearest by embedding
    fix_context(cluster)        -> dict             profile facts a fix may name ({partition}, ...)
    apply_fix(script, ops, ctx) -> str              structured edits, pure and idempotent
    diff / suggestions                              unified diff and line-anchored review suggestions
    debug_loop(script, run, cluster)                locate -> match -> apply -> run again
    with llm= (a maple_ci.llm backend), a failure no known fix covers is shown to a model, whose
    edits are kept only when they pass the policy (policy.py), the script still parses and passes the
    static checks; a model's edit is never run: the loop stops for a person to review it

The knowledge base is data: templates/errors/*.yaml, one list of entries per topic (see KBEntry).
logs.py reads logs, kb.py holds the known cases and the edits a fix may make, policy.py says which
edits may be made (for a known fix and a model alike), edits.py applies them.
"""

from collections import Counter
from typing import TYPE_CHECKING, Callable, Literal, Mapping, NamedTuple, Optional

from pydantic import BaseModel, Field

from ..errors import MapleError
from ..profiles import get_profile
from .candidates import advise, candidates
from .diagnosis import Advice, Candidate, Diagnosis
from .edits import Suggestion, apply_fix, apply_suggestions, diff, resolve, suggestions
from .kb import Category, EditOp, ExportEnv, KBEntry, Match, exact_matches, fix_context, load_kb, match
from .logs import WINDOW_BEFORE, Failure, classify, is_error_line, locate
from .retrieval import Reference, github_api, search_docs, search_github

if TYPE_CHECKING:
    from ..llm import Backend

__all__ = [
    "Advice", "Attempt", "Candidate", "Category", "DebugReport", "Diagnosis", "EditOp", "ExportEnv", "Failure", "KBEntry", "Match", "RunOutcome", "Step",
    "Suggestion", "WINDOW_BEFORE", "apply_fix", "apply_suggestions", "classify", "debug_loop", "diagnose", "diff",
    "exact_matches", "fix_context", "is_error_line", "load_kb", "locate", "match", "next_fix", "suggestions",
]  # fmt: skip

# ---------------------------------------------------------------------------------------------
# The loop


class RunOutcome(NamedTuple):
    """What a verification backend reports for one run of the script."""

    ok: bool
    log: str


class Attempt(BaseModel):
    line_no: int
    line: str
    exception: Optional[str]
    category: Category
    entry_id: str
    explanation: str
    ops: list[EditOp]  # with the values it used filled in
    diff: str


# review: a language model proposed the last fix; it is not run until a person has read it
StopReason = Literal["passed", "infrastructure", "no_error_found", "no_fix", "max_iter", "review"]
MODEL_SOURCE = "llm:"  # a model's attempt is named llm:<backend>


class DebugReport(BaseModel):
    ok: bool
    stop_reason: StopReason
    message: str  # what a person should do next
    script: str  # the script as last run
    attempts: list[Attempt] = Field(default_factory=list)  # one per fix applied
    failure: Optional[Failure] = None  # the last failure, when the run did not pass
    matches: list[Match] = Field(default_factory=list)  # known cases for the last failure


class Step(NamedTuple):
    """One diagnosis of a failed run: the fix to try next, or why there is none."""

    failure: Optional[Failure]
    attempt: Optional[Attempt]  # None when no fix applies
    script: str  # patched when attempt is set, else unchanged
    stop: Optional[StopReason]  # set when the loop must stop here
    message: str


def _attempt(failure: Failure, entry_id: str, explanation: str, ops: list, script: str, patched: str, path: str) -> Attempt:
    return Attempt(
        line_no=failure.line_no, line=failure.line, exception=failure.exception, category=failure.category,
        entry_id=entry_id, explanation=explanation, ops=ops, diff=diff(script, patched, path),
    )  # fmt: skip


def next_fix(
    script: str, log: str, cluster: Optional[str], context: dict, path: str = "script", llm: Optional["Backend"] = None
) -> Step:
    """Locate the first error in a failed run's log and apply the best candidate fix (diagnose)
    that needs no value a person must fill in. Only exact matches are applied: a similar case is a
    hint for a person, not evidence. When none applies and `llm` is given, the model's proposal is
    tried (_model_fix)."""
    found = diagnose(script, log, cluster, context)
    failure, advice = found.failure, found.advice
    if failure is None:
        return Step(None, None, script, "no_error_found", "the run failed but no line of its log is a recognisable error")
    ready = [c for c in found.candidates if not c.find]
    if advice.kind == "infrastructure" and not ready:  # nothing to change; a workaround would be offered
        return Step(failure, None, script, "infrastructure", advice.text)
    if ready:
        top = ready[0]
        return Step(failure, _attempt(failure, top.entry_id, top.explanation, top.ops, script, top.script, path),
                    top.script, None, top.explanation)  # fmt: skip
    if found.candidates:
        names = ", ".join(found.candidates[0].find)
        no_fix = f"the fix needs {names}, which neither the log nor the cluster profile gives. {advice.text}"
    else:
        no_fix = advice.text
    if llm is not None:
        return _model_fix(script, failure, cluster, context, path, llm, no_fix)
    return Step(failure, None, script, "no_fix", no_fix)


def _new_errors(script: str, patched: str, cluster: Optional[str]) -> list[str]:
    """What the patched script gets wrong that the script did not: bash -n always; with a cluster,
    the static checks (counted by name, so an error that was already there is not held against the
    patch), read with the intent of the unpatched script so that a changed entrypoint shows."""
    from ..extract import extract_script
    from ..verify.static import bash_syntax, static_checks

    syntax = bash_syntax(patched)
    if not syntax.ok:
        return [f"bash -n: {syntax.message}"]
    if cluster is None:
        return []
    intent, profile = extract_script(script), get_profile(cluster)
    extract_script(patched)  # still reads as a launch script (MapleError otherwise)

    def errors(text: str) -> list:
        return [c for c in static_checks(text, intent, profile) if not c.ok and c.severity == "error"]

    before = Counter(c.name for c in errors(script))
    new = []
    for check in errors(patched):
        if before[check.name]:
            before[check.name] -= 1
        else:
            new.append(check.message)
    return new


def _model_fix(script: str, failure: Failure, cluster: Optional[str], context: dict, path: str, llm: "Backend",
               no_fix: str) -> Step:  # fmt: skip
    """The language model's edit for a failure no known fix covers, kept only when it changes the
    script, still parses and adds no static-check error; otherwise no_fix with the reason."""
    from .model import propose_ops

    source = f"{MODEL_SOURCE}{llm.name}"
    proposal = propose_ops(llm, script, "\n".join(failure.window), context)

    def rejected(why: str) -> Step:
        return Step(failure, None, script, "no_fix", f"{no_fix}; {source} proposed no usable fix: {why}")

    if not proposal.ops:
        return rejected(proposal.explanation)
    try:
        patched = apply_fix(script, proposal.ops, context)
        if patched == script:
            return rejected("its edit changes nothing")
        errors = _new_errors(script, patched, cluster)
    except MapleError as exc:
        return rejected(str(exc))
    if errors:
        return rejected("the patched script fails checks the script passed: " + "; ".join(errors))
    explanation = (
        f"Proposed by a language model ({source}), not a known fix: it passed bash -n and the static checks, "
        f"but review it. The model says: {proposal.explanation or '(no explanation)'}"
    )
    ops = [resolve(op, context) for op in proposal.ops]
    return Step(failure, _attempt(failure, source, explanation, ops, script, patched, path), patched, None, explanation)


def diagnose(script: str, log: str, cluster: Optional[str], context: Optional[dict] = None, docs: bool = False,
             online: Optional[Mapping[str, str]] = None, llm: Optional["Backend"] = None) -> Diagnosis:  # fmt: skip
    """What `maple debug` prints: the first error, the known cases, the candidate fixes ranked
    (candidates.candidates) and the advice of a kind (candidates.advise); with `docs`, the
    centers' pages nearest to the error; with `online` (an environment: GITHUB_API_URL,
    GITHUB_TOKEN), GitHub issues about its key line; with `llm`, several candidates in the
    model's order, with its reason (the candidates are the knowledge base's: it adds no edit)."""
    context = fix_context(cluster) | (context or {})
    failure = locate(log)
    if failure is None:
        return Diagnosis(failure=None, advice=Advice(kind="none", text="no line of the log is a recognisable error"))
    exact = exact_matches(failure, cluster)
    found, reasons, lookups = candidates(script, log, exact, context)
    found, model_says = _model_order(failure, found, llm) if llm is not None and len(found) > 1 else (found, "")
    advice = advise(failure, exact, found, reasons, lookups, script, log, context)
    diagnosis = Diagnosis(failure=failure, matches=exact, candidates=found, advice=advice, model_says=model_says)
    if docs:
        diagnosis.references += search_docs(failure)
    if online is not None:
        try:
            diagnosis.references += search_github(failure, github_api(online), online.get("GITHUB_TOKEN"))
        except MapleError as exc:  # offline answers stand; say what was not searched
            diagnosis.notes.append(str(exc))
    return diagnosis


def _model_order(failure: Failure, found: list[Candidate], llm: "Backend") -> tuple[list[Candidate], str]:
    """The candidates in the model's order, and its reason (or why its order was not used)."""
    from .model import rank_candidates

    ranking = rank_candidates(llm, "\n".join(failure.window), found)
    return [found[i] for i in ranking.order], f"{MODEL_SOURCE}{llm.name}: {ranking.explanation or '(no explanation)'}"


def debug_loop(
    script: str,
    run: Callable[[str], RunOutcome],
    cluster: Optional[str] = None,
    max_iter: int = 5,
    context: Optional[dict] = None,
    path: str = "script",
    llm: Optional["Backend"] = None,
) -> DebugReport:
    """Run the script; while it fails, apply the next known fix (next_fix) and run again. Stops when
    the run passes, on a hardware failure, when no known fix applies, or after max_iter fixes.
    `context` adds facts a fix may need that no profile holds (an account, a partition); `llm`
    proposes a fix when no known one applies (maple_ci.llm.backend_from_setting), which is never
    run: the loop stops there (stop reason "review") with the patched script for a person to read."""
    context = fix_context(cluster) | (context or {})
    current, attempts = script, []

    def report(stop: StopReason, message: str, failure=None) -> DebugReport:
        matches = match(failure, cluster) if failure is not None else []
        return DebugReport(
            ok=stop == "passed", stop_reason=stop, message=message, script=current,
            attempts=attempts, failure=failure, matches=matches,
        )  # fmt: skip

    while True:
        ok, log = run(current)
        if ok:
            return report("passed", f"the run passed after {len(attempts)} fix(es)")
        if len(attempts) == max_iter:
            return report("max_iter", f"still failing after {max_iter} fixes", locate(log))
        step = next_fix(current, log, cluster, context, path, llm)
        if step.stop:
            return report(step.stop, step.message, step.failure)
        attempts.append(step.attempt)
        current = step.script
        if step.attempt.entry_id.startswith(MODEL_SOURCE):  # its text may come from injected log or fork text
            return report("review", f"{step.message} Not run: review the model's edit before running it.", step.failure)
