"""Score an unseen set with `maple bench --suite real`'s own scoring (maple_ci.bench_real).

    python benchmarks/unseen/score.py benchmarks/unseen/2026-11-29

A set is one folder holding cases.yaml (tests/data/real/README.md's format) and its checkout. The
folder's parent is the root bench_real loads groups from; only the named set is scored. Prints the
cases, the share ported to three targets with the right program, the share of fields right (overall
and per field), then one line per case with what is wrong. The extra keys of an unseen set
(`classes`, `program_note`) are not scored: they are for reading ports by hand.
"""

import sys
import tempfile
from pathlib import Path

from maple_ci.bench_real import FIELDS, TARGETS, load_real_cases, run_real


def score(set_dir: Path) -> dict:
    cases = [case for case in load_real_cases(set_dir.parent) if case["group"] == set_dir]
    if not cases:
        raise SystemExit(f"no cases.yaml cases under {set_dir}")
    return run_real(cases, Path(tempfile.mkdtemp(prefix="maple-unseen-")))


def _problems(failure: dict) -> str:
    wrong = [f"{field}: {value['got']!r} != {value['expected']!r}" if isinstance(value, dict) else f"{field}: {value}"
             for field, value in failure["wrong"].items()]
    return "; ".join(wrong + failure["port"])


def print_report(report: dict) -> None:
    port = report["port"]
    print(f"cases: {report['cases']} (sources: {report['sources']})")
    print(f"ported to {', '.join(port['targets'])} with the right program and size: "
          f"{port['passed']}/{port['total']} = {port['accuracy']:.1%}")
    print(f"fields right: {report['extraction_overall']:.1%}")
    for field in FIELDS:
        row = report["extraction"][field]
        print(f"  {field:15} {row['correct']:3}/{row['total']} = {row['accuracy']:.1%}")
    print(f"cases with a problem: {len(report['failures'])}")
    for failure in report["failures"]:
        print(f"- {failure['case']}: {_problems(failure)}")


def trace_silent(set_dir: Path) -> dict:
    """Ports that pass every static check (exit 0) but whose trace differs from the source's in what
    their header does not name: silent wrong ports, judged by bash rather than by maple's reader."""
    from maple_ci.errors import MapleError
    from maple_ci.extract import extract
    from maple_ci.port import port_intent, program_from_trace
    from maple_ci.trace import trace_with_ports
    from maple_ci.trace.compare import SAMPLE_ARGS, SUBMIT_ARGS, compare, header_of, stops_itself

    counts = {"ports": 0, "ok": 0, "silent": 0, "loud": 0, "untraceable": 0, "cases": []}
    out = Path(tempfile.mkdtemp(prefix="maple-unseen-trace-"))
    for case in [c for c in load_real_cases(set_dir.parent) if c["group"] == set_dir]:
        text = case["path"].read_text()
        args = SAMPLE_ARGS if SUBMIT_ARGS.search(text) else ()
        try:
            intent = extract(text, case["file"], base_dir=case["path"].parent, root=set_dir)
            if intent.entrypoint is None:  # as maple port does
                intent = program_from_trace(intent, case["path"], trusted=False)
            results = port_intent(intent, list(TARGETS), case["file"], out, source_text=text)
            todo = [result for result in results if result.status == "ok"]
            # traced as maple port's gate traces them: side by side, the source on the devices its launch used
            source, ports = trace_with_ports(case["path"], [(r.cluster, r.script) for r in todo],
                                             cluster=intent.source_cluster, checkout=set_dir, args=args, trusted=True,
                                             gpus=intent.gpus_per_node)
            if isinstance(source, MapleError):
                raise source
        except MapleError as error:
            counts["cases"].append((case["file"], "refused or untraceable", str(error)[:200]))
            counts["untraceable"] += 1
            continue
        counts["ports"] += len(results)
        counts["loud"] += len(results) - len(todo)
        for result, port in zip(todo, ports):
            if isinstance(port, MapleError):
                raise port
            found = compare(source, port, header_of(result.script))
            if stops_itself(port):
                counts["loud"] += 1
            elif found:
                counts["silent"] += 1
                counts["cases"].append((case["file"], result.cluster, "; ".join(d.message for d in found)[:300]))
            else:
                counts["ok"] += 1
    return counts


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in ([], ["--trace"]):
        raise SystemExit("usage: python benchmarks/unseen/score.py benchmarks/unseen/<set> [--trace]")
    if sys.argv[2:] == ["--trace"]:
        counts = trace_silent(Path(sys.argv[1]).resolve())
        print(f"ports: {counts['ports']}; exit 0 and the trace agrees: {counts['ok']}; loud (failed a check or "
              f"stops itself): {counts['loud']}; silent wrong (exit 0, trace differs, header silent): "
              f"{counts['silent']}; cases refused or untraceable: {counts['untraceable']}")
        # `maple port` runs this comparison by default (where bubblewrap is): each of the silent ones fails there
        print(f"with maple port's trace gate (its default where bubblewrap is): the {counts['silent']} silent wrong "
              f"ports each fail, naming the difference")
        for row in counts["cases"]:
            print("- " + " | ".join(row))
    else:
        print_report(score(Path(sys.argv[1]).resolve()))
