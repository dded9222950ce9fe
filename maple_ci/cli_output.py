"""What the `maple` command line prints: rich tables and lines for a person, JSON for --json."""

import json
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table

# Logs and pipes are not terminals: rich would wrap them at 80 columns and cut paths.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def print_json(data) -> None:
    out.print_json(json.dumps(data), highlight=False) if out.is_terminal else print(json.dumps(data, indent=2))


def progress(json_output: bool):
    """A status line on stderr for long steps (model load, index build); silent for --json."""
    if json_output or not err.is_terminal:
        return lambda message: None
    return lambda message: err.log(message, highlight=False)


def print_port_table(results) -> None:
    table = Table("cluster", "template", "checks", "path")
    for r in results:
        table.add_row(r.cluster, r.template or "-", _checks_cell(r), r.path or r.reason)
    out.print(table)
    for r in results:
        _print_findings(r)


def _checks_cell(r) -> str:
    failed = [c for c in r.checks if not c.ok and c.severity == "error"]
    if r.status == "unsupported":
        return "[yellow]unsupported[/]"
    if failed:
        return f"[red]{len(failed)} failed[/]"
    # Warnings (a skipped linter, an account to fill in) are counted apart, not as passes.
    warned = sum(not c.ok for c in r.checks)
    return f"[green]{len(r.checks) - warned} ok[/]" + (f", [yellow]{warned} warning(s)[/]" if warned else "")


def _print_findings(r) -> None:
    for c in r.checks:
        if not c.ok:
            colour = "red" if c.severity == "error" else "yellow"
            where = f" (line {c.line})" if c.line else ""
            out.print(f"[{colour}]{r.cluster}: {c.name}{where}:[/] {c.message}", highlight=False)
    if r.status == "unsupported":
        out.print(f"[yellow]{r.cluster}: not generated:[/] {r.reason}", highlight=False)


def print_verified(verified, json_output: bool) -> None:
    result, report = verified.result, verified.report
    if json_output:
        print_json({"result": result.model_dump(), "debug": report.model_dump() if report else None})
        return
    _print_result(result)
    if report:
        print_debug_report(report)


def _print_result(result) -> None:
    """One run's verdict, the backend's notes, and the log's tail when it failed."""
    colour = "green" if result.ok else "red"
    # The message quotes the job's log (a result line, an NCCL line): text, never markup.
    out.print(f"[{colour}]{'passed' if result.ok else 'failed'}[/] ({result.backend}, {result.state}): "
              f"{escape(result.message)}", highlight=False)
    for note in result.notes:
        out.print(f"  note: {note}", highlight=False)
    if result.speed:
        from .verify.speed import rows

        for what, value in rows(result.speed):
            out.print(f"  speed: {what}: {value}", markup=False, highlight=False)
    if not result.ok and result.log:
        out.print(result.log[-3000:], markup=False, highlight=False)


def print_debug_report(report) -> None:
    for number, attempt in enumerate(report.attempts, 1):
        out.print(f"[bold]fix {number}[/] ({attempt.entry_id}, line {attempt.line_no}: {attempt.line.strip()})",
                  highlight=False)
        out.print(f"  {attempt.explanation}", highlight=False)
        out.print(attempt.diff, markup=False, highlight=False)
    colour = "green" if report.ok else "yellow"
    out.print(f"[{colour}]{report.stop_reason}[/]: {report.message}", highlight=False)


def _edits(ops) -> str:
    """A candidate's edit operations as their values, without the op names or empty fields."""
    return "; ".join(" ".join(str(v) for k, v in op if k != "op" and v != "") for op in ops)


def _fill_in(find: dict) -> str:
    """What the user must look up for a candidate, and the command that finds each."""
    return f" (fill in: {', '.join(f'{n}: {cmd}' for n, cmd in find.items())})" if find else ""


def print_diagnosis(found) -> None:
    """The ranked candidates, the advice of its kind, and where else the error is discussed."""
    for rank, c in enumerate(found.candidates, 1):
        out.print(f"  candidate {rank} ({c.entry_id}): {_edits(c.ops)}{_fill_in(c.find)}", markup=False, highlight=False)
    if found.model_says:  # untrusted words: printed without markup
        out.print(f"  order by {found.model_says}", markup=False, highlight=False)
    out.print(f"[bold]advice[/] ({found.advice.kind}): {found.advice.text}", highlight=False)
    for ref in found.references:
        answer = f"\n    the answer that closed it: {ref.closed_by}" if ref.closed_by else ""
        out.print(f"  see ({ref.source}) {ref.title} {ref.url}\n    {ref.summary}{answer}", markup=False, highlight=False)
    for note in found.notes:
        err.print(f"note: {note}", markup=False, highlight=False)


def print_debug_step(step, hints, out_path) -> None:
    """`maple debug`'s first error, the known fix (or why there is none, and similar known cases)."""
    if step.failure:
        f = step.failure
        out.print(f"[bold]first error[/] (line {f.line_no}, {f.category}): {f.line.strip()}", highlight=False)
    if not step.attempt:
        out.print(f"[yellow]{step.stop}[/]: {step.message}", highlight=False)
        for m in hints:
            kind = "known case" if m.kind == "exact" else "similar known case"
            out.print(f"  {kind} {m.entry.id} ({m.score:.2f}): {m.entry.explanation}", highlight=False)
        return
    out.print(f"[bold]known fix[/] {step.attempt.entry_id}: {step.attempt.explanation}", highlight=False)
    out.print(step.attempt.diff, markup=False, highlight=False)
    if out_path:
        err.print(f"patched script written to {out_path}")


def debug_json(step, fixes, hints, found) -> dict:
    """`maple debug --json`: the failure, the fix, its review suggestions, similar cases, the diagnosis."""
    return {
        "failure": step.failure.model_dump() if step.failure else None,
        "fix": step.attempt.model_dump() if step.attempt else None,
        "stop": step.stop, "message": step.message,
        "suggestions": [s.model_dump() for s in fixes],
        "similar": [{"id": m.entry.id, "score": m.score, "explanation": m.entry.explanation} for m in hints],
        **found.model_dump(include={"candidates", "advice", "references", "notes", "model_says"}),
    }
