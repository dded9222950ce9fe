"""`maple bench --suite real`: launch scripts in the styles real users write, each labelled with the
JobIntent a careful reader takes from it (tests/data/real/<group>/cases.yaml, format in
tests/data/real/README.md).

Each group folder is one checkout: the scripts and the files they name (wrappers, configs). A case
is scored per JobIntent field, then ported to three targets; a port succeeds when the generated
script, read back, runs the same program with the same arguments at the same size (or, for a size
chosen at submit time, takes its size from the allocation).
"""

from pathlib import Path
from typing import Callable, Optional

import yaml

from .errors import MapleError
from .extract import extract, extract_script
from .extract.submit import without_arguments
from .files import read_text
from .paths import bundled
from .port import port_intent, program_from_trace
from .profiles import get_profile
from .programs import ranks_per_node, relabelled
from .schedulers.jobvars import translate
from .verify.readback import as_port_reads
from .intent import without_record

FIELDS = ("scheduler", "source_cluster", "launcher", "framework", "strategy", "nodes", "gpus_per_node",
          "world_size", "entrypoint", "script_args", "walltime", "account", "queue")
TARGETS = ("perlmutter", "polaris", "frontier")
_READS_ALLOCATION = ("SLURM_NNODES", "SLURM_JOB_NUM_NODES", "PBS_NODEFILE")


def real_dir() -> Path:
    return bundled("tests") / "data" / "real"


def load_real_cases(root: Optional[Path] = None) -> list[dict]:
    """Every case of every group, with its group folder (the checkout) and the script's path."""
    root = root or real_dir()
    if not root.is_dir():
        raise MapleError(f"no real-script corpus at {root}; run from a maple-ci source checkout")
    cases = []
    for listing in sorted(root.glob("*/cases.yaml")):
        for case in yaml.safe_load(listing.read_text()) or []:
            cases.append({**case, "group": listing.parent, "path": listing.parent / case["file"]})
    return cases


def _port_problems(intent, case: dict, out_dir: Path) -> list[str]:
    try:
        results = port_intent(intent, list(TARGETS), case["file"], out_dir)
    except MapleError as exc:
        return [f"refused: {exc}"]
    return [problem for result in results for problem in _result_problems(result, case["expect"])]


def _result_problems(result, expect: dict) -> list[str]:
    """What one target's port does differently from the labelled program and size."""
    if result.status != "ok":
        return [f"{result.cluster}: {result.status} "
                + "; ".join([result.reason] + [c.message for c in result.checks if not c.ok and c.severity == "error"])]
    back = extract_script(result.script)
    return [*_program_problems(result.cluster, back, expect), *_size_problems(result, back, expect["nodes"])]


def _program_problems(cluster: str, back, expect: dict) -> list[str]:
    # the source scheduler's job variables read as the target's job has them ($SLURM_SUBMIT_DIR -> $PBS_O_WORKDIR)
    scheduler, per_node = get_profile(cluster).scheduler, back.gpus_per_node or 1
    # a job array's count and bounds are the constants of the port's own array directive (schedulers/arrays.py)
    had = ranks_per_node(expect["nodes"], expect.get("world_size"), expect.get("gpus_per_node"))
    try:
        entrypoint = translate(expect["entrypoint"], scheduler, per_node, back.array, had)
        arguments = [translate(arg, scheduler, per_node, back.array, had) for arg in expect["script_args"]]
    except MapleError as error:  # a labelled word the target's scheduler has no equivalent for: no port can match it
        return [f"{cluster}: the label has no {scheduler} form ({error})"]
    arguments = relabelled(arguments, expect, back)
    problems = []
    if back.entrypoint != entrypoint:
        problems.append(f"{cluster}: runs {back.entrypoint!r}, not {entrypoint!r}")
    labels = (arguments, [as_port_reads(arg, back.env) for arg in arguments])  # the second as the gate reads them
    if _as_labelled(back.script_args, "script_args") not in [_as_labelled(label, "script_args") for label in labels]:
        problems.append(f"{cluster}: arguments {back.script_args} != {arguments}")
    return problems


def _size_problems(result, back, nodes: Optional[int]) -> list[str]:
    if nodes is None:
        if not any(name in without_record(result.script) for name in _READS_ALLOCATION):
            return [f"{result.cluster}: size chosen at submit time, but the port does not read the allocation"]
        return []
    if back.nodes != nodes and "model-parallel ranks need a world size" not in result.script:
        return [f"{result.cluster}: {back.nodes} nodes, not {nodes}"]  # unexplained
    return []


def run_real(cases: list[dict], out_dir: Path, progress: Callable[[int, int], None] = lambda done, total: None) -> dict:
    hits = {field: 0 for field in FIELDS}
    failures, ported = [], 0
    for number, case in enumerate(cases, 1):
        progress(number, len(cases))
        name = str(case["path"].relative_to(case["group"].parent))
        try:
            intent = extract(read_text(case["path"], name), name, case["path"].parent, case["group"])
        except MapleError as exc:
            failures.append({"case": name, "source": case.get("source"), "wrong": {"error": str(exc)}, "port": []})
            continue
        if intent.entrypoint is None:  # as `maple port` does: the trace (sandboxed) shows the program
            intent = program_from_trace(intent, case["path"], trusted=False)
        wrong = _wrong_fields(intent, case["expect"])
        for field in FIELDS:
            hits[field] += field not in wrong
        problems = _port_problems(intent, case, out_dir / name.replace("/", "_"))
        ported += not problems
        if wrong or problems:
            failures.append({"case": name, "source": case.get("source"), "wrong": wrong, "port": problems})
    return _real_report(cases, hits, ported, failures)


def _as_labelled(value, field: str):
    """A field as the labels are compared: script arguments as submitted with no arguments from an empty
    environment (submit.without_arguments), both the reader's, which keeps such defaults live, and the label's."""
    return [without_arguments(word) for word in value] if field == "script_args" and value else value


def _wrong_fields(intent, expect: dict) -> dict:
    return {field: {"got": getattr(intent, field), "expected": expect[field]} for field in FIELDS
            if _as_labelled(getattr(intent, field), field) != _as_labelled(expect[field], field)}


def _share(part: float, total: int) -> float:
    return part / total if total else 0.0


def _real_report(cases: list[dict], hits: dict, ported: int, failures: list) -> dict:
    total = len(cases)
    return {
        "cases": total,
        "groups": sorted({case["group"].name for case in cases}),
        "sources": len({case.get("source") for case in cases}),
        "extraction": {f: {"correct": hits[f], "total": total, "accuracy": _share(hits[f], total)} for f in FIELDS},
        "extraction_overall": _share(sum(hits.values()), total * len(FIELDS)),
        "port": {"targets": list(TARGETS), "passed": ported, "total": total, "accuracy": _share(ported, total)},
        "failures": failures,
    }
