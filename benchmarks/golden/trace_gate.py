"""The trace gate on the golden suite: how often it fails a port the golden verdicts call right.

    PYTHONPATH=$PWD python benchmarks/golden/trace_gate.py [PREFIX]   # PREFIX: only sources named so (perlmutter/)

Every golden port (the centers' published scripts, each ported to the other clusters with a script
of the same kind) is judged by the trace gate `maple port` runs by default. Against the golden
verdict (maple_ci/bench_golden.py: as-is or after the header's edit, versus wrong), each gate
verdict is right (passes a right port, fails a wrong one) or not: a right port the gate fails is a
false alarm, to be read; a wrong one it passes, a miss. Prints the counts and each false alarm.
"""

import sys
import tempfile
from pathlib import Path

from maple_ci.bench_golden import _port_row, load_golden, port_targets
from maple_ci.errors import MapleError
from maple_ci.extract import extract
from maple_ci.port import port_intent
from maple_ci.trace.compare import gate


def judge(cases: list[dict], out: Path, only: str = "") -> dict:
    counts = {"ports": 0, "passed right": 0, "failed right (false alarm)": 0, "failed wrong": 0,
              "passed wrong (miss)": 0, "not traced": 0}
    alarms = []
    for case in cases:
        targets = port_targets(case, cases)
        if not targets or not case["name"].startswith(only):
            continue
        try:
            intent = extract(case["text"], case["name"], case["path"].parent, case["path"].parent)
            results = port_intent(intent, targets, case["name"], out, source_text=case["text"])
        except MapleError:
            continue
        rows = {r.cluster: _port_row(case, cases, intent, r)["verdict"] for r in results}
        for result in gate(case["path"], [r for r in results if r.status == "ok"], trusted=True,
                           cluster=intent.source_cluster, gpus=intent.gpus_per_node):
            trace = [c for c in result.checks if c.name == "trace"]
            counts["ports"] += 1
            if not trace or (not trace[-1].ok and trace[-1].severity == "warning"):
                counts["not traced"] += 1
                continue
            right = rows[result.cluster] in ("as-is", "edit")
            key = {(True, True): "passed right", (True, False): "failed right (false alarm)",
                   (False, False): "failed wrong", (False, True): "passed wrong (miss)"}[(right, trace[-1].ok)]
            counts[key] += 1
            if key.startswith("failed right"):
                alarms.append(f"{case['name']} -> {result.cluster}: {trace[-1].message[:300]}")
    return {"counts": counts, "false alarms": alarms}


if __name__ == "__main__":
    report = judge(load_golden(), Path(tempfile.mkdtemp(prefix="maple-golden-gate-")), (sys.argv[1:] or [""])[0])
    print("; ".join(f"{key}: {value}" for key, value in report["counts"].items()))
    for line in report["false alarms"]:
        print("- " + line)
