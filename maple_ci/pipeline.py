"""The one verify-then-debug flow, for `maple verify --fix` and the bot alike.

    script_runner(backend, path, options, in_place) -> Run   one way to run a script's text
    verify_and_debug(script, run, ...)           -> Verified   run it; on failure, the debug agent

A run's result is verify.substitute.VerifyResult, whatever the backend; the debug loop sees it
through debug.RunOutcome, converted here only.
"""

from __future__ import annotations

import tempfile
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING, Callable, Optional

from .errors import MapleError
from .verify import run_verification

if TYPE_CHECKING:
    from .debug import DebugReport, RunOutcome
    from .llm import Backend as ModelClient
    from .verify.substitute import VerifyResult

# Runs the text of a script. `committed` is False for the debug agent's patched script, which
# exists only in memory; a runner that fetches by commit (jacamar) cannot run it.
Run = Callable[[str, bool], "VerifyResult"]

MAX_FIXES = 5  # re-runs the debug agent may spend on one script


@dataclass
class Verified:
    result: VerifyResult  # the first run, of the script as given
    report: Optional[DebugReport] = None  # the debug agent's work, when the run failed and fixing was asked

    @property
    def ok(self) -> bool:
        return self.result.ok or bool(self.report and self.report.ok)


def script_runner(backend: str, path: Path, options: dict, in_place: bool = False) -> Run:
    """Run a script's text with the named backend. jacamar runs the committed file `path` (the
    center fetches it by commit); slurm and local run a scratch copy named like `path`, or with
    `in_place`, the committed text at `path` itself (the CLI's own file)."""
    def run(text: str, committed: bool) -> VerifyResult:
        if backend == "jacamar":
            if not committed:
                raise MapleError("the jacamar backend runs committed scripts only")
            return run_verification(backend, path, **options)
        if in_place and committed:
            return run_verification(backend, path, **options)
        with tempfile.TemporaryDirectory(prefix="maple-verify-") as scratch:
            file = Path(scratch) / Path(path).name
            file.write_text(text)
            return run_verification(backend, file, **options)
    return run


def verify_and_debug(script: str, run: Run, *, cluster: Optional[str], path: str, fix: bool = True,
                     rerun: bool = True, model: Optional[ModelClient] = None,
                     lock: Optional[Lock] = None) -> Verified:
    """Run `script`; when it fails and `fix` is set, let the debug agent patch it and run it again
    (at most MAX_FIXES times). A runner that cannot run an uncommitted script (rerun False) gets
    one fix, reported but not re-run. A language model's fix is never run (the debug loop stops
    at it, stop reason "review"): it waits for a person. `lock` (the bot's: one analysis at a time across threads) is
    held while the debug agent thinks, never while a run waits in a queue."""
    first = run(script, True)
    if first.ok or not fix:
        return Verified(first)
    from .debug import debug_loop

    attempt = _attempts(first, _unlocked(run, lock) if rerun else None)
    with lock or nullcontext():
        report = debug_loop(script, attempt, cluster, max_iter=MAX_FIXES if rerun else 1, path=path, llm=model)
    return Verified(first, report)


def _attempts(first: VerifyResult, rerun: Optional[Run]) -> Callable[[str], RunOutcome]:
    """The debug loop's runs: the first is the run already made (an allocation is never spent
    twice on one script); without `rerun` every later one reports that failure again, so the loop
    stops after one fix."""
    from .debug import RunOutcome

    runs = iter([first])

    def attempt(candidate: str) -> RunOutcome:
        outcome = next(runs, None) or (rerun(candidate, False) if rerun else first)
        return RunOutcome(outcome.ok, outcome.log)
    return attempt


def _unlocked(run: Run, lock: Optional[Lock]) -> Run:
    """`run` with `lock` (held by the caller) released for the run's length."""
    if lock is None:
        return run

    def released(text: str, committed: bool) -> VerifyResult:
        lock.release()
        try:
            return run(text, committed)
        finally:
            lock.acquire()
    return released
