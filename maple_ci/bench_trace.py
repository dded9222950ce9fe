"""`maple bench --suite trace`: the traced program of rank 0 against each real-corpus label (issue 25:
the trace is the oracle only if it reads the corpus as a careful reader does), and what a trace costs.

The label writes the outside world's variables as written (`$SCRATCH/data`, `$USER`); they are put in
from the trace's own allocation (the site stand-ins, the job's variables), an unknown one as empty,
as bash would. `--local_rank=N` (deepspeed's, per worker) is not the script's word and is left out. A case the trace
cannot match says why in its cases.yaml entry (`trace_miss`); the report names each miss with it.
"""

from __future__ import annotations

import ast
import fnmatch
import operator
import re
import statistics
from typing import Callable

from .errors import MapleError
from .trace import trace_script
from .trace.compare import first_rank

_VARIABLE = re.compile(r"\$\{(\w+)(%%|%|##|#)([^}]*)\}|\$\{?(\w+)\}?")
_ARGUMENTS = re.compile(r'"?\$(\{?[@*]\}?)"?')
_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.Div: lambda a, b: int(a / b)}  # bash divides integers toward zero
_PER_RANK = re.compile(r"^--local[_-]rank=\d+$")


def expected_words(expect: dict, env: dict) -> list:
    """The label's words as bash gives them on the trace's allocation: a variable put in, `$((...))`
    computed, a word that is only a variable the job lacks (an argument `$1`) dropped as an unquoted
    empty expansion is, and `"$@"` as the submit line's arguments (the trace passes none)."""
    def put_in(word) -> str:
        return _arithmetic(_VARIABLE.sub(lambda m: _value(m, env), str(word)), env)

    entry = expect.get("entrypoint") or ""
    words = entry.split(" ", 1) if entry.startswith("-m ") else [entry]
    return [put_in(w) for w in [*words, *(expect.get("script_args") or [])]
            if not _ARGUMENTS.fullmatch(str(w)) and not (_VARIABLE.fullmatch(str(w)) and not put_in(w))]


def _value(m, env: dict) -> str:
    """$NAME, ${NAME}, or ${NAME%%PATTERN} (and %, ##, #): bash's removal of the longest or shortest
    matching suffix or prefix."""
    if m.group(4):
        return env.get(m.group(4), "")
    value, how, pattern = env.get(m.group(1), ""), m.group(2), m.group(3)
    cuts = range(len(value) + 1)
    if how.startswith("%"):
        ends = [i for i in cuts if fnmatch.fnmatchcase(value[i:], pattern)]
        return value[:ends[0 if how == "%%" else -1]] if ends else value
    starts = [i for i in cuts if fnmatch.fnmatchcase(value[:i], pattern)]
    return value[starts[-1 if how == "##" else 0]:] if starts else value


def _arithmetic(word: str, env: dict) -> str:
    """`$((SLURM_NTASKS_PER_NODE * 2))` as bash computes it: names put in (0 when unset), integers, + - * /."""
    def compute(m) -> str:
        text = re.sub(r"[A-Za-z_]\w*", lambda n: env.get(n.group(0), "0") if env.get(n.group(0), "0").isdigit() else "x",
                      m.group(1))
        try:
            return str(_integer(ast.parse(text, mode="eval").body))
        except (SyntaxError, ValueError, ZeroDivisionError):
            return m.group(0)
    return re.sub(r"\$\(\(([^()]*)\)\)", compute, word)


def _integer(node) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_integer(node.left), _integer(node.right))
    raise ValueError("not bash integer arithmetic")


def traced_words(case: dict) -> tuple[list, dict]:
    trace = trace_script(case["path"], cluster=case["expect"].get("source_cluster"), checkout=case["group"], trusted=True)
    ranks = first_rank(trace)
    env = {"USER": "user", "HOME": "/tmp/home", **trace.job_env, **(ranks[-1].env if ranks else {})}
    words = [w for w in (ranks[-1].program if ranks else []) if not _PER_RANK.match(w)]
    return words, {"env": env, "seconds": trace.seconds}


def run_trace(cases: list[dict], _out_dir, progress: Callable[[int, int], None] = lambda done, total: None) -> dict:
    matched, failures, seconds = 0, [], []
    for number, case in enumerate(cases, 1):
        progress(number, len(cases))
        name = str(case["path"].relative_to(case["group"].parent))
        try:
            got, info = traced_words(case)
        except MapleError as exc:
            failures.append({"case": name, "got": str(exc)[:200], "expected": "", "why": case.get("trace_miss")})
            continue
        seconds.append(info["seconds"])
        want = expected_words(case["expect"], info["env"])
        if got == want:
            matched += 1
        else:
            failures.append({"case": name, "got": " ".join(got)[:200], "expected": " ".join(want)[:200],
                             "why": case.get("trace_miss")})
    return {"cases": len(cases), "matched": matched, "accuracy": matched / len(cases) if cases else 0.0,
            "trace_seconds_median": statistics.median(seconds) if seconds else None,
            "trace_seconds_max": max(seconds) if seconds else None, "failures": failures,
            "unexplained": sum(1 for f in failures if not f["why"])}


def print_trace(report: dict, out) -> None:
    out.print(f"rank 0's traced program matches the label: {report['matched']}/{report['cases']} "
              f"({report['accuracy']:.1%}); a trace takes {report['trace_seconds_median'] or 0:.2f} s "
              f"(median), {report['trace_seconds_max'] or 0:.2f} s at most; misses without a known reason: "
              f"{report['unexplained']}", highlight=False)
    for failure in report["failures"]:
        # a case's `trace_miss` (its cases.yaml entry) says why the trace cannot match that label
        why = f"; why: {failure['why']}" if failure["why"] else "; why: not known (a regression?)"
        out.print(f"- {failure['case']}: traced `{failure['got']}`, label `{failure['expected']}`{why}",
                  highlight=False, markup=False)
