"""`maple bench --suite golden`: the centers' own published launch scripts as acceptance tests.

benchmarks/golden/<cluster>/ holds each script verbatim beside a YAML naming its source, the date it
was read, its workload kind and the center's launch facts it shows (README there). Each script is
ported to every other cluster that has a published script of the same kind, and each port scored:

  facts    the target center's facts for that kind (from its own scripts) present in the port
  gate     the read-back gate (verify/readback.py) passes: same program, arguments, process model,
           ranks and rendezvous variables as the source, after the port's deliberate decisions
           (maple's own readback checks; where a port has none, the bench runs the gate itself)
  silent   the gate fails yet maple's own checks said "ok": a confident, wrong port
  accepted ports maple passed that, compared with the source itself, differ: the port's recorded
           decisions (a scheduler variable in an argument put in for the target), listed to judge
  verdict  refused  no script was written (maple said why)
           wrong    the gate fails, a fact the center marks needed is missing (unless a header note
                    asks for it: the fact's `remedy`, e.g. --python-env), or bash -n fails
           edit     otherwise, when the port asks for an edit: a placeholder (<ACCOUNT>) in a live
                    line, a header note that asks (fill in, give, check, ... yourself), or a
                    failed static check
           as-is    otherwise
"""

import re
from pathlib import Path
from typing import Callable, Optional

import yaml

from .errors import MapleError
from .extract import extract, extract_script
from .files import read_text
from .library import get_template
from .paths import bundled
from .port import PortResult, port_intent, write_results
from .process_model import PER_NODE, process_model
from .profiles import get_profile
from .verify.readback import readback_checks

VERDICTS = ("as-is", "edit", "wrong", "refused")
# A header note that asks the user to change or confirm something before the job runs.
_ASKS = re.compile(r"\b(?:fill in|yourself|give (?:the|it|them|its|a)|replace|check|must|put (?:the|it|them))\b", re.I)
_PLACEHOLDER = re.compile(r"<[A-Za-z_][\w -]*>")
_DIRECTIVE = re.compile(r"^\s*#(?:SBATCH|PBS)\s")


def golden_dir() -> Path:
    return bundled("benchmarks") / "golden"


def load_golden(root: Optional[Path] = None) -> list[dict]:
    """Every golden case: its YAML with the script's path and text."""
    root = root or golden_dir()
    if not root.is_dir():
        raise MapleError(f"no golden scripts at {root}; run from a maple-ci source checkout")
    cases = []
    for meta in sorted(root.glob("*/*.yaml")):
        case = yaml.safe_load(meta.read_text())
        path = meta.parent / case["script"]
        cases.append({**case, "path": path, "name": f"{meta.parent.name}/{case['script']}",
                      "text": read_text(path, str(path))})
    return cases


def live_text(script: str) -> str:
    """What the job runs or the scheduler reads: directives and commands, not comments."""
    return "\n".join(line for line in script.splitlines()
                     if _DIRECTIVE.match(line) or not line.lstrip().startswith("#"))


def fact_present(fact: dict, script: str) -> bool:
    return re.search(fact["pattern"], live_text(script), re.M) is not None


def facts_not_shown(cases: list[dict]) -> list[str]:
    """Facts a case lists that its own script does not show (unless marked as read from the page)."""
    return [f"{case['name']}: {fact['id']}" for case in cases for fact in case["facts"]
            if fact.get("in_script", True) and not fact_present(fact, case["text"])]


def target_facts(cases: list[dict], cluster: str, kind: str, conditions: frozenset[str] = frozenset()) -> list[dict]:
    """The center's facts for a kind of workload: every fact its scripts of that kind show, once;
    a fact `when: container` or `when: per-node` only where the port's source runs in a container
    or the port starts one launcher per node (`conditions`). A fact is needed (its absence makes a
    port wrong) only where the center marks it so and every one of its scripts of that kind shows
    it: those in a container when the port's source is in one, the others when it is not (an image
    brings its own Python), all when it has no such script."""
    same = [case for case in cases if case["cluster"] == cluster and case["kind"] == kind]
    container = "container" in conditions
    pool = [case for case in same if case.get("container", False) == container] or same
    facts = _facts_shown(same, conditions)
    for fact in facts:
        fact["needed"] = bool(fact.get("needed")) and all(_shows(case, fact["id"]) for case in pool)
    return facts


def _facts_shown(cases: list[dict], conditions: frozenset[str]) -> list[dict]:
    """Each fact the cases list that applies under `conditions`, once (a copy, first one kept)."""
    facts = {}
    for fact in (fact for case in cases for fact in case["facts"]):
        if fact.get("when") is None or fact["when"] in conditions:
            facts.setdefault(fact["id"], dict(fact))
    return list(facts.values())


def _shows(case: dict, fact_id: str) -> bool:
    return any(f["id"] == fact_id for f in case["facts"])


def header_notes(script: str) -> list[str]:
    return [line for line in script.splitlines() if line.startswith("# Note:") or line.startswith("# maple-ci:")]


def asks_for_edit(result: PortResult) -> bool:
    asks = any(_ASKS.search(note) for note in header_notes(result.script))
    placeholder = _PLACEHOLDER.search(live_text(result.script)) is not None
    failed = any(not c.ok and c.severity == "error" and not c.name.startswith("readback:") for c in result.checks)
    return asks or placeholder or failed


def verdict(result: Optional[PortResult], gate_failures: list[str], missing_needed: list[str]) -> str:
    if result is None or not result.script:
        return "refused"
    if gate_failures or missing_needed or _syntax_failed(result):
        return "wrong"
    return "edit" if asks_for_edit(result) else "as-is"


def _syntax_failed(result: PortResult) -> bool:
    syntax = next((c for c in result.checks if c.name == "bash-syntax"), None)
    return syntax is not None and not syntax.ok


def _errors(checks) -> list[str]:
    return [f"{c.name}: {c.message}" for c in checks if not c.ok and c.severity == "error"]


def _missing_needed(facts: list[dict], present: list[str], script: str) -> list[str]:
    """Needed facts absent from the port and not remedied by one of its header notes."""
    notes = "\n".join(header_notes(script))
    return [f["id"] for f in facts if f.get("needed") and f["id"] not in present
            and not (f.get("remedy") and re.search(f["remedy"], notes))]


def _gate_failures(case: dict, intent, result: PortResult) -> tuple[list[str], list[str]]:
    """(the read-back gate's failures as shipped with the port, else as read against the source;
    the differences against the source itself). Against the source, the port's own decisions (an
    argument's scheduler variable put in for the target) show as differences too: listed so a
    reader can judge each one."""
    direct = readback_checks(result.script, intent, get_profile(result.cluster), get_template(result.template),
                             case["text"])
    differs = _errors(direct)
    shipped = [c for c in result.checks if c.name.startswith("readback:")]
    return (_errors(shipped) if shipped else differs), differs


def _score_port(case: dict, intent, result: PortResult, facts: list[dict]) -> dict:
    present = [f["id"] for f in facts if fact_present(f, result.script)]
    failures, differs = _gate_failures(case, intent, result)
    maple_ok = result.status == "ok"
    return {"source": case["name"], "target": result.cluster,
            "verdict": verdict(result, failures, _missing_needed(facts, present, result.script)),
            "maple_ok": maple_ok, "gate_ok": not failures, "silent": maple_ok and bool(failures),
            "accepted": differs if maple_ok else [],
            "facts": {"present": len(present), "total": len(facts)},
            "missing_facts": [f["id"] for f in facts if f["id"] not in present], "gate_failures": failures}


def _refused(case: dict, target: str, why: str) -> dict:
    return {"source": case["name"], "target": target, "verdict": "refused", "maple_ok": False, "gate_ok": None,
            "silent": False, "accepted": [], "facts": {"present": 0, "total": 0}, "missing_facts": [],
            "gate_failures": [], "reason": why}


def _port_case(case: dict, cases: list[dict], targets: list[str], out_dir: Path) -> list[dict]:
    try:
        intent = extract(case["text"], case["name"], case["path"].parent, case["path"].parent)
        results = port_intent(intent, targets, case["name"], out_dir, source_text=case["text"])
    except MapleError as exc:
        return [_refused(case, target, str(exc)) for target in targets]
    write_results(results, out_dir)  # under the report's folder, to read a verdict against the port
    return [_port_row(case, cases, intent, result) for result in results]


def _port_row(case: dict, cases: list[dict], intent, result: PortResult) -> dict:
    if result.status == "unsupported":
        return _refused(case, result.cluster, result.reason)
    facts = target_facts(cases, result.cluster, case["kind"], _conditions(intent, result))
    return _score_port(case, intent, result, facts)


def _conditions(intent, result: PortResult) -> frozenset[str]:
    """What makes a `when:` fact apply: the source runs in a container, the port starts one launcher per node."""
    conditions = set()
    if intent.container is not None:
        conditions.add("container")
    if process_model(extract_script(result.script)) == PER_NODE:
        conditions.add("per-node")
    return frozenset(conditions)


def port_targets(case: dict, cases: list[dict]) -> list[str]:
    """Every other cluster with a published script of the same kind of workload."""
    return sorted({c["cluster"] for c in cases if c["kind"] == case["kind"] and c["cluster"] != case["cluster"]})


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def run_golden(cases: list[dict], out_dir: Path, progress: Callable[[int, int], None] = lambda done, total: None) -> dict:
    rows = []
    for number, case in enumerate(cases, 1):
        progress(number, len(cases))
        if targets := port_targets(case, cases):
            rows += _port_case(case, cases, targets, out_dir / case["name"].replace("/", "_"))
    return _golden_report(cases, rows, out_dir)


def _golden_report(cases: list[dict], rows: list[dict], out_dir: Path) -> dict:
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    return {
        "scripts": len(cases),
        "clusters": sorted({c["cluster"] for c in cases}),
        "ports": len(rows),
        "verdicts": counts,
        "runs": _ratio(counts["as-is"] + counts["edit"], len(rows)),
        "facts": _fact_totals(rows),
        "gate": _gate_totals(rows),
        "maple_ok": sum(r["maple_ok"] for r in rows),
        "silent": sum(r["silent"] for r in rows),
        "accepted": sum(bool(r["accepted"]) for r in rows),
        "ports_dir": str(out_dir),
        "rows": rows,
    }


def _fact_totals(rows: list[dict]) -> dict:
    present = sum(r["facts"]["present"] for r in rows)
    total = sum(r["facts"]["total"] for r in rows)
    return {"present": present, "total": total, "ratio": _ratio(present, total)}


def _gate_totals(rows: list[dict]) -> dict:
    """Over the ports written (not refused): how many pass the read-back gate."""
    written = [r for r in rows if r["verdict"] != "refused"]
    return {"passed": sum(bool(r["gate_ok"]) for r in written), "total": len(written)}
