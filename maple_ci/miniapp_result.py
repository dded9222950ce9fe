"""Read the result line a mini-app (miniapps/*.py) prints, out of whatever a verification run
captured: a Slurm output file, a GitLab job trace, a local run's stdout.

Rank 0 prints `MAPLE_MINIAPP_RESULT {json}` when the run succeeds; a rank that fails prints the same
prefix with `"ok": false` and an "error". Launchers may put a label in front of the line (srun
--label "0: ", mpiexec -prepend-rank "[0] ", torchrun --tee "[default0]:"), so the prefix is looked
for anywhere in a line, and text after the JSON object is ignored.
"""

from __future__ import annotations

import json

RESULT_PREFIX = "MAPLE_MINIAPP_RESULT"  # must match miniapps/_common.py


def parse_results(text: str) -> list[dict]:
    """Every well-formed result object in text, in order; malformed or truncated lines are skipped."""
    decoder = json.JSONDecoder()
    results = []
    for line in text.splitlines():
        at = line.find(RESULT_PREFIX)
        if at < 0:
            continue
        try:
            value, _ = decoder.raw_decode(line[at + len(RESULT_PREFIX):].lstrip())
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("ok"), bool):
            results.append(value)
    return results


def parse_result(text: str) -> dict | None:
    """The verdict of one run: the first failure any rank reported (it names the error; rank 0 may
    never get to print when a peer died), else the last success line, else None when no mini-app
    result reached the output at all (it never started, or was killed before reporting)."""
    results = parse_results(text)
    failures = [r for r in results if not r["ok"]]
    if failures:
        return failures[0]
    return results[-1] if results else None
