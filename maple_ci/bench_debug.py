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
from .debug.edits import apply_fix, loaded_modules, same_option
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
        self._edits_fit_kind()
        ops = TypeAdapter(list[EditOp])
        ops.validate_python([{k: ("x" if v == "*" else v) for k, v in e.items()} for e in self.expected.edits])
        return self

    def _edits_fit_kind(self) -> None:
        """Edits where the fix kind is one; the advice kind the fix kind implies (README: fix_kind)."""
        edits, advice = self.expected.edits, self.expected.advice_kind
        if self.fix_kind in ("script", "site_value") and not edits:
            raise ValueError(f"fix_kind {self.fix_kind} needs expected.edits")
        want = {"script": None, "environment": None if edits else "environment"}.get(self.fix_kind, self.fix_kind)
        if advice != want:
            raise ValueError(f"fix_kind {self.fix_kind} needs expected.advice_kind {want}")


def load_classes(root: Optional[Path] = None) -> dict[str, dict]:
    classes = yaml.safe_load(((root or debug_dir()) / "classes.yaml").read_text()) or {}
    known = {e.id for e in load_kb()}
    for name, row in classes.items():
        unknown = sorted(set(row.get("entries", [])) - known)
        if unknown:
            raise MapleError(f"classes.yaml: {name} names unknown knowledge-base entries {unknown}")
    return classes


def load_debug_cases(root: Optional[Path] = None, cases_dir: Optional[Path] = None) -> list[DebugCase]:
    """Every case under <root>/cases (or cases_dir: a held-out set scored against root's classes),
    validated; a bad case is an error naming its file and field."""
    root = root or debug_dir()
    cases_dir = cases_dir or root / "cases"
    classes = load_classes(root)
    cases = []
    for path in sorted(cases_dir.glob("*.yaml")):
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
        raise MapleError(f"no debug cases under {cases_dir}")
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


def _same_target(expected: dict, op: dict, scheduler: Optional[str]) -> bool:
    """The op edits what the expected edit does: the same option, flag or launcher."""
    fields = [f for f in _TARGET if f in expected]
    return all(same_option(expected[f], op.get(f, ""), op["op"], scheduler) for f in fields)


def _has_token(text: str, word: str) -> bool:
    """word occurs in text as a whole token: `head_node_ip` in `--rdzv_endpoint=$head_node_ip:29400`,
    `-n4` not in `-n48`."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def _text_meets(expected: dict, op: dict) -> bool:
    """A replace_text: the expected old inside the op's old, and every expected word in its new."""
    old_ok = expected["old"] == "*" or _words(expected["old"]) in _words(op["old"])
    new_ok = expected["new"] == "*" or all(_has_token(op["new"], w) for w in expected["new"].split())
    return old_ok and new_ok


def _op_meets(expected: dict, op: dict, scheduler: Optional[str] = None) -> bool:
    if expected["op"] != op["op"] or not _same_target(expected, op, scheduler):
        return False
    if expected["op"] == "replace_text":
        return _text_meets(expected, op)
    want = expected.get("value", "")
    return want == "*" or _unquoted(want) == _unquoted(op.get("value", ""))


def _same_result(expected: list[dict], script: str, patched: Optional[str]) -> bool:
    """The expected edits (with no "*" in them) turn the script into the candidate's script."""
    if not script or patched is None or any("*" in e.values() for e in expected):
        return False
    try:
        return apply_fix(script, TypeAdapter(list[EditOp]).validate_python(expected)) == patched
    except MapleError:
        return False


def _loads_the_modules(expected: list[dict], script: str, patched: Optional[str]) -> bool:
    """Expected module loads met in other words: the candidate's script loads every expected module
    that the script did not (`module load bacio w3nco upp` for add_module bacio and w3nco)."""
    if patched is None or any(e["op"] != "add_module" for e in expected):
        return False
    new = loaded_modules(patched) - loaded_modules(script)
    return all(e["name"] in new for e in expected)


def meets(expected: list[dict], ops: list[dict], script: str = "", patched: Optional[str] = None,
          scheduler: Optional[str] = None) -> bool:  # fmt: skip
    """Every expected edit is met by one of the candidate's ops, or (an equivalent) the candidate
    turns the script into what the expected edits make of it, or loads the modules they add."""
    if not expected:
        return False
    if all(any(_op_meets(e, op, scheduler) for op in ops) for e in expected):
        return True
    return _same_result(expected, script, patched) or _loads_the_modules(expected, script, patched)


# ---------------------------------------------------------------------------------------------
# Running and scoring


def _first_entry(diagnosis) -> Optional[str]:
    top = diagnosis.matches[0] if diagnosis.matches else None
    return top.entry.id if top and top.kind == "exact" else None


def _classified(case: DebugCase, diagnosis, row: dict) -> bool:
    """The first known case is one of the class's entries (its category, for a class with none
    yet), or the top candidate's precondition names the class as its narrower cause (kb.Fix.cause)."""
    if row.get("entries"):
        by_message = _first_entry(diagnosis) in row["entries"]
    else:
        by_message = bool(diagnosis.failure) and diagnosis.failure.category == row["category"]
    return by_message or bool(diagnosis.candidates) and diagnosis.candidates[0].cause == case.class_


def _hits(case: DebugCase, diagnosis) -> list[bool]:
    """For each of the first TOP_K candidates: whether it is the accepted fix (or an equivalent)."""
    scheduler = None if case.scheduler == "none" else case.scheduler
    return [meets(case.expected.edits, [op.model_dump() for op in c.ops], case.script or "", c.script, scheduler)
            for c in diagnosis.candidates[:TOP_K]]  # fmt: skip


def _advice_ok(case: DebugCase, diagnosis, hit: list[bool]) -> Optional[bool]:
    """Advice of the expected kind (None: the case expects an edit, not advice). A site value is
    met by the edit with a placeholder and how to find it, or the value itself."""
    kind = case.expected.advice_kind
    if kind == "site_value":
        return bool(hit) and hit[0] and diagnosis.advice.kind in ("site_value", "fix")
    return None if kind is None else diagnosis.advice.kind == kind


def _located(case: DebugCase, failure) -> bool:
    """A Python traceback is located by its first line and the exception that ends it."""
    if failure is None:
        return False
    lines = [x.strip() for x in (failure.line, failure.exception) if x and x.strip()]
    return any(case.first_error.strip() in x or x in case.first_error for x in lines)


def score_case(case: DebugCase, diagnosis, classes: dict) -> dict:
    """One case's scores from the agent's diagnosis (maple_ci.debug.Diagnosis)."""
    failure = diagnosis.failure
    hit = _hits(case, diagnosis)
    return {
        "case": case.id, "fix_kind": case.fix_kind, "got_line": failure.line.strip() if failure else "",
        "entry": _first_entry(diagnosis), "located": _located(case, failure),
        "classified": _classified(case, diagnosis, classes[case.class_]), "advice_kind": diagnosis.advice.kind,
        "fix": any(hit) if _wants_fix(case) else None, "fix_at_1": bool(hit) and hit[0],
        "wrong_edit": bool(hit) and not hit[0], "advice": _advice_ok(case, diagnosis, hit),
    }  # fmt: skip


def _wants_fix(case: DebugCase) -> bool:
    """A case whose accepted fix is an edit of the script or its environment (not a site value)."""
    return bool(case.expected.edits) and case.fix_kind != "site_value"


def _share(rows: list[dict], key: str) -> dict:
    count = sum(1 for r in rows if r[key])
    return {"count": count, "total": len(rows), "rate": round(count / len(rows), 4) if rows else None}


def _missed(row: dict) -> bool:
    """A case that missed something: not located or classified, a wrong edit, no fix, wrong advice."""
    return not (row["located"] and row["classified"]) or row["wrong_edit"] or False in (row["fix"], row["advice"])


def _sources(cases: list[DebugCase]) -> int:
    """How many threads' homes (repositories, trackers, sites) the cases come from."""
    return len({re.sub(r"(/issues|/discussions|/pull)/.*", "", c.source_url) for c in cases})


def _summary(rows: list[dict]) -> dict:
    """The shares of every score; fixes over the cases that want one, advice over those that want it."""
    edits = [r for r in rows if r["fix"] is not None]
    advice = [r for r in rows if r["advice"] is not None]
    return {
        "located": _share(rows, "located"), "classified": _share(rows, "classified"),
        "fix_proposed": _share(edits, "fix"), "fix_at_1": _share(edits, "fix_at_1"),
        "wrong_edit": _share(rows, "wrong_edit"), "advice": _share(advice, "advice"),
    }  # fmt: skip


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
    return {"cases": len(rows), "sources": _sources(cases), **_summary(rows), "rows": rows,
            "failures": [r for r in rows if _missed(r)]}  # fmt: skip


def _cluster(case: DebugCase) -> Optional[str]:
    """The cluster `maple debug` recognises from the script (None when it cannot read one)."""
    from .extract import extract_script

    if not case.script:
        return None
    try:
        return extract_script(case.script).source_cluster
    except MapleError:
        return None


def _misses(row: dict) -> list[str]:
    """What one case missed, in the words of the table."""
    checks = [
        ("located", not row["located"]), ("classified", not row["classified"]), ("wrong edit", row["wrong_edit"]),
        ("no accepted fix", row["fix"] is False), (f"advice {row['advice_kind']}", row["advice"] is False),
    ]  # fmt: skip
    return [word for word, missed in checks if missed]


def _rate(share: dict) -> str:
    return f"{share['rate']:.1%}" if share["rate"] is not None else "-"


def print_debug(report: dict, out) -> None:
    """The scores as one table, then the cases that missed something (rich Console `out`)."""
    from rich.markup import escape
    from rich.table import Table

    table = Table("score", "count", "rate", title=f"debug agent on {report['cases']} real failures ({report['sources']} sources)")
    for key in ("located", "classified", "fix_proposed", "fix_at_1", "wrong_edit", "advice"):
        share = report[key]
        table.add_row(key.replace("_", " "), f"{share['count']}/{share['total']}", _rate(share))
    out.print(table)
    for r in report["failures"]:
        out.print(f"[red]{r['case']}[/] ({r['fix_kind']}): {', '.join(_misses(r))}; first line {escape(repr(r['got_line'][:90]))}",
                  highlight=False)
