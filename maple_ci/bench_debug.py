"""`maple bench --suite debug`: the debug agent on real failures (benchmarks/debug/README.md).

Each case gives the agent a launch script and a log, as `maple debug SCRIPT --log LOG` would, and
scores its diagnosis: the first error located, the class recognised, the thread's accepted fix
among its ranked candidates, a wrong edit offered first, and advice of the right kind.
"""

import re
import shlex
from datetime import date
from pathlib import Path
from typing import Callable, Literal, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from .debug import EditOp, load_kb
from .debug.edits import apply_fix, canonical_option
from . import schedulers
from .errors import MapleError
from .paths import bundled

FixKind = Literal["script", "environment", "infrastructure", "policy", "user_code", "site_value"]
# "environment": a change outside the script (rebuild the conda environment, reinstall a package).
AdviceKind = Literal["infrastructure", "policy", "user_code", "site_value", "environment"]

TOP_K = 3  # candidates a person reads before giving up on the list


def debug_dir() -> Path:
    return bundled("benchmarks") / "debug"


class Expected(BaseModel):
    model_config = ConfigDict(extra="forbid")
    edits: list[dict] = Field(default_factory=list)  # EditOps whose values may be "*"
    advice_kind: Optional[AdviceKind] = None

    @field_validator("advice_kind", mode="before")
    @classmethod
    def _edit_is_none(cls, value):
        return None if value == "edit" else value  # "edit": the answer is the edits themselves


class DebugCase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    source_url: str = Field(pattern=r"^https://")
    read_on: date
    cluster: str
    scheduler: str  # a registered scheduler (maple_ci.schedulers) or "none"
    script: Optional[str]
    script_verbatim: Optional[bool] = None
    script_note: Optional[str] = None
    notes: Optional[str] = None
    log: str = Field(min_length=1)
    first_error: str = Field(min_length=1)
    cause: str
    class_: str = Field(alias="class", pattern=r"^[a-z][a-z0-9_]*$")
    fix_kind: FixKind
    accepted_fix: str
    expected: Expected

    @field_validator("scheduler")
    @classmethod
    def _known_scheduler(cls, name: str) -> str:
        if name not in ("none", *schedulers.names()):
            raise ValueError(f"unknown scheduler {name!r}; known: none, {', '.join(schedulers.names())}")
        return name

    @model_validator(mode="after")
    def _consistent(self) -> "DebugCase":
        if not any(self.first_error in line for line in self.log.split("\n")):
            raise ValueError("first_error is not part of one line of the log")
        edits, advice = self.expected.edits, self.expected.advice_kind
        if self.fix_kind in ("script", "site_value") and not edits:
            raise ValueError(f"fix_kind {self.fix_kind} needs expected.edits")
        want = {"script": None, "environment": None if edits else "environment"}.get(self.fix_kind, self.fix_kind)
        if advice != want:
            raise ValueError(f"fix_kind {self.fix_kind} needs expected.advice_kind {want}")
        ops = TypeAdapter(list[EditOp])
        ops.validate_python([{k: ("x" if v == "*" else v) for k, v in e.items()} for e in edits])
        return self


def load_classes(root: Optional[Path] = None) -> dict[str, dict]:
    classes = yaml.safe_load(((root or debug_dir()) / "classes.yaml").read_text()) or {}
    known = {e.id for e in load_kb()}
    for name, row in classes.items():
        unknown = sorted(set(row.get("entries", [])) - known)
        if unknown:
            raise MapleError(f"classes.yaml: {name} names unknown knowledge-base entries {unknown}")
    return classes


def load_debug_cases(root: Optional[Path] = None) -> list[DebugCase]:
    """Every case under <root>/cases, validated; a bad case is an error naming its file and field."""
    root = root or debug_dir()
    classes = load_classes(root)
    cases = []
    for path in sorted((root / "cases").glob("*.yaml")):
        try:
            case = DebugCase.model_validate(yaml.safe_load(path.read_text()))
        except (ValidationError, yaml.YAMLError) as exc:
            raise MapleError(f"invalid debug case {path.name}: {exc}") from exc
        if case.id != path.stem:
            raise MapleError(f"invalid debug case {path.name}: id {case.id!r} is not the file name")
        if case.class_ not in classes:
            raise MapleError(f"invalid debug case {path.name}: class {case.class_!r} is not in classes.yaml")
        cases.append(case)
    if not cases:
        raise MapleError(f"no debug cases under {root / 'cases'}")
    return cases


# ---------------------------------------------------------------------------------------------
# Comparing ops

_TARGET = ("name", "flag", "launcher")


def _words(text: str) -> str:
    return " ".join(text.split())


def _unquoted(value: str) -> str:
    """A value as the shell reads it: 'AWS Libfabric' and "AWS Libfabric" are AWS Libfabric."""
    try:
        words = shlex.split(value)
    except ValueError:
        return value
    return words[0] if len(words) == 1 else value


def _op_meets(expected: dict, op: dict) -> bool:
    if expected["op"] != op["op"]:
        return False
    for field in _TARGET:
        if field in expected and canonical_option(expected[field], op["op"]) != canonical_option(op.get(field, ""), op["op"]):
            return False
    if expected["op"] == "replace_text":
        old_ok = expected["old"] == "*" or _words(expected["old"]) in _words(op["old"])
        new_ok = expected["new"] == "*" or all(w in op["new"].split() for w in expected["new"].split())
        return old_ok and new_ok
    want = expected.get("value", "")
    return want == "*" or _unquoted(want) == _unquoted(op.get("value", ""))


def meets(expected: list[dict], ops: list[dict], script: str = "", patched: Optional[str] = None) -> bool:
    """Every expected edit is met by one of the candidate's ops, or (an equivalent) the candidate
    turns the script into what the expected edits make of it."""
    if not expected:
        return False
    if all(any(_op_meets(e, op) for op in ops) for e in expected):
        return True
    if not script or patched is None or any("*" in e.values() for e in expected):
        return False
    try:
        return apply_fix(script, TypeAdapter(list[EditOp]).validate_python(expected)) == patched
    except MapleError:
        return False


# ---------------------------------------------------------------------------------------------
# Running and scoring


def score_case(case: DebugCase, diagnosis, classes: dict) -> dict:
    """One case's scores from the agent's diagnosis (maple_ci.debug.Diagnosis)."""
    failure = diagnosis.failure
    line = failure.line if failure else ""
    row = classes[case.class_]
    first_entry = diagnosis.matches[0].entry.id if diagnosis.matches and diagnosis.matches[0].kind == "exact" else None
    if row.get("entries"):
        classified = first_entry in row["entries"]
    else:
        classified = bool(failure) and failure.category == row["category"]
    # A fix's precondition may name a narrower cause than the message's entry (kb.Fix.cause).
    classified = classified or bool(diagnosis.candidates) and diagnosis.candidates[0].cause == case.class_
    ranked = [[op.model_dump() for op in c.ops] for c in diagnosis.candidates]
    edits, advice_kind = case.expected.edits, case.expected.advice_kind
    hit = [meets(edits, ops, case.script or "", c.script) for ops, c in zip(ranked[:TOP_K], diagnosis.candidates)]
    advice = None if advice_kind is None else diagnosis.advice.kind == advice_kind
    if advice_kind == "site_value":  # the edit with a placeholder and how to find it, or the value itself
        advice = bool(hit) and hit[0] and diagnosis.advice.kind in ("site_value", "fix")
    # A Python traceback is located by its first line and the exception that ends it.
    lines = [x.strip() for x in (line, failure.exception if failure else None) if x and x.strip()]
    located = any(case.first_error.strip() in x or x in case.first_error for x in lines)
    return {
        "case": case.id, "fix_kind": case.fix_kind, "got_line": line.strip(), "entry": first_entry,
        "located": located, "classified": classified, "advice_kind": diagnosis.advice.kind,
        "fix": any(hit) if _wants_fix(case) else None, "fix_at_1": bool(hit) and hit[0],
        "wrong_edit": bool(ranked) and not hit[0], "advice": advice,
    }  # fmt: skip


def _wants_fix(case: DebugCase) -> bool:
    """A case whose accepted fix is an edit of the script or its environment (not a site value)."""
    return bool(case.expected.edits) and case.fix_kind != "site_value"


def _share(rows: list[dict], key: str) -> dict:
    count = sum(1 for r in rows if r[key])
    return {"count": count, "total": len(rows), "rate": round(count / len(rows), 4) if rows else None}


def run_debug(cases: list[DebugCase], step: Optional[Callable[[int, int], None]] = None) -> dict:
    """The debug agent on every case, as `maple debug` runs it (offline, no model)."""
    from .debug import diagnose

    classes = load_classes()
    rows = []
    for done, case in enumerate(cases, 1):
        diagnosis = diagnose(case.script or "", case.log, _cluster(case))
        rows.append(score_case(case, diagnosis, classes))
        if step:
            step(done, len(cases))
    edits = [r for r in rows if r["fix"] is not None]
    advice = [r for r in rows if r["advice"] is not None]
    return {
        "cases": len(rows), "sources": len({re.sub(r"(/issues|/discussions|/pull)/.*", "", c.source_url) for c in cases}),
        "located": _share(rows, "located"), "classified": _share(rows, "classified"),
        "fix_proposed": _share(edits, "fix"), "fix_at_1": _share(edits, "fix_at_1"),
        "wrong_edit": _share(rows, "wrong_edit"), "advice": _share(advice, "advice"),
        "rows": rows,
        "failures": [r for r in rows if not (r["located"] and r["classified"]) or r["wrong_edit"]
                     or r["fix"] is False or r["advice"] is False],
    }  # fmt: skip


def _cluster(case: DebugCase) -> Optional[str]:
    """The cluster `maple debug` recognises from the script (None when it cannot read one)."""
    from .extract import extract_script

    if not case.script:
        return None
    try:
        return extract_script(case.script).source_cluster
    except MapleError:
        return None


def print_debug(report: dict, out) -> None:
    """The scores as one table, then the cases that missed something (rich Console `out`)."""
    from rich.markup import escape
    from rich.table import Table

    table = Table("score", "count", "rate", title=f"debug agent on {report['cases']} real failures ({report['sources']} sources)")
    for key in ("located", "classified", "fix_proposed", "fix_at_1", "wrong_edit", "advice"):
        share = report[key]
        rate = f"{share['rate']:.1%}" if share["rate"] is not None else "-"
        table.add_row(key.replace("_", " "), f"{share['count']}/{share['total']}", rate)
    out.print(table)
    for r in report["failures"]:
        misses = [k for k in ("located", "classified") if not r[k]] + (["wrong edit"] if r["wrong_edit"] else [])
        misses += ["no accepted fix"] if r["fix"] is False else []
        misses += [f"advice {r['advice_kind']}"] if r["advice"] is False else []
        out.print(f"[red]{r['case']}[/] ({r['fix_kind']}): {', '.join(misses)}; first line {escape(repr(r['got_line'][:90]))}",
                  highlight=False)
