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

from maple_ci.bench_real import FIELDS, load_real_cases, run_real


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


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python benchmarks/unseen/score.py benchmarks/unseen/<set>")
    print_report(score(Path(sys.argv[1]).resolve()))
