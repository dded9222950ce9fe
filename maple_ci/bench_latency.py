"""`maple bench --suite latency`: whole-process time, peak memory and CPU of the commands a user runs,
cold and warm; per-stage latency in this process; scaling with targets and with the template library.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from .bench import AccuracyCase, suite_targets
from .errors import MapleError
from .extract import extract
from .library import load_templates
from .paths import bundled
from .port import port_intent
from .profiles import get_profile


def _timed(function: Callable[[], object], repeat: int) -> dict:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return {"median_ms": statistics.median(samples) * 1000, "max_ms": max(samples) * 1000, "runs": repeat}


# Whole-process commands timed by the latency suite: a port to one target and to all, each with and
# without the trace gate (on by default where bubblewrap is), and an extraction.
PROCESS_COMMANDS = {
    "port, 1 cluster, static checks": ["port", "{example}", "--to", "polaris", "--out", "{out}", "--no-trace"],
    "port, 1 cluster, traced": ["port", "{example}", "--to", "polaris", "--out", "{out}", "--trace"],
    "port, all clusters, static checks": ["port", "{example}", "--to", "all", "--out", "{out}", "--no-trace"],
    "port, all clusters, traced": ["port", "{example}", "--to", "all", "--out", "{out}", "--trace"],
    "extract": ["extract", "{example}"],
    "port, skypilot task": ["port", "{example}", "--to", "skypilot", "--out", "{out}"],
}


# Runs one child and prints its wall time, peak RSS and CPU time (its own and its children's: bash -n,
# shellcheck), the last a figure other work on a shared machine does not inflate. Linux gives a child the high-water RSS of the
# process it was forked from (recorded at exec), so a big parent (pytest, `maple bench` after its
# in-process stages) would inflate every figure: this small interpreter is the parent instead.
_MEASURE = ("import os, subprocess, sys, time\n"
            "start = time.perf_counter()\n"
            "child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
            "_, status, usage = os.wait4(child.pid, 0)\n"
            "print(time.perf_counter() - start, usage.ru_maxrss, os.waitstatus_to_exitcode(status),\n"
            "      usage.ru_utime + usage.ru_stime)\n")


def _run_process(argv: list[str], env: dict) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MiB) and CPU seconds of one child process, from its own rusage (os.wait4)."""
    run = subprocess.run([sys.executable, "-S", "-c", _MEASURE, *argv], env=env, capture_output=True, text=True,
                         check=False)
    try:
        seconds, peak_kib, code, cpu = run.stdout.split()
    except ValueError:
        raise MapleError(f"could not time {' '.join(argv)}: {run.stderr[-2000:]}") from None
    if int(code) not in (0, 1):  # 1: a check failed, still a complete run
        raise MapleError(f"{' '.join(argv)} exited {code}: {run.stderr[-2000:]}")
    return float(seconds), int(peak_kib) / 1024, float(cpu)


def process_latency(runs: int = 5) -> dict:
    """Each command as a user runs it, `python -m maple_ci ...`, `runs` times: cold, every run with an
    empty MAPLE_DATA_DIR (no LanceDB table, no embedding or search cache; the OS file cache is left
    as it is), then warm, every run after one untimed run that fills a shared data dir. Medians and
    peak memory (the child's ru_maxrss)."""
    example = str(bundled("examples") / "perlmutter_torchrun_ddp.sbatch")
    figures, load_before = {}, os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="maple-latency-") as scratch:
        # Bytecode is written as a pip install leaves it (PYTHONDONTWRITEBYTECODE would make every run compile).
        env = {key: value for key, value in os.environ.items() if key not in ("MAPLE_DATA_DIR", "PYTHONDONTWRITEBYTECODE")}
        for number, (name, words) in enumerate(PROCESS_COMMANDS.items()):
            argv = [sys.executable, "-m", "maple_ci", *(w.format(example=example, out=f"{scratch}/out") for w in words)]
            figures[name] = {"argv": argv[3:], **_cold_and_warm(argv, env, f"{scratch}/cold-{number}", f"{scratch}/warm", runs)}
    return {"runs": runs, "cpus": os.cpu_count(), "load": [load_before, os.getloadavg()[0]], "commands": figures,
            "trace_cost": trace_cost(figures)}


def trace_cost(figures: dict) -> dict:
    """What the trace gate adds to a port, to one cluster and to all: the traced port's warm medians
    less the static one's, wall and CPU seconds. The CPU is the child's rusage, which does not hold
    the processes inside bubblewrap's namespaces (a traced 0.6 s shell loop added 4 ms to it): it is
    maple's own part; `perf stat -e task-clock` counts them too (docs/benchmarks.md)."""
    cost = {}
    for scope in ("1 cluster", "all clusters"):
        if f"port, {scope}, traced" not in figures or f"port, {scope}, static checks" not in figures:
            continue
        static, traced = figures[f"port, {scope}, static checks"]["warm"], figures[f"port, {scope}, traced"]["warm"]
        cost[scope] = {"wall_s": traced["median_s"] - static["median_s"],
                       "cpu_s": traced["cpu_median_s"] - static["cpu_median_s"]}
    return cost


def _cold_and_warm(argv: list[str], env: dict, cold_prefix: str, warm_dir: str, runs: int) -> dict:
    """One command's figures: cold runs, each with a data dir of its own, and warm runs sharing one
    data dir filled by an untimed run first."""
    cold = [_run_process(argv, env | {"MAPLE_DATA_DIR": f"{cold_prefix}-{run}"}) for run in range(runs)]
    warm_env = env | {"MAPLE_DATA_DIR": warm_dir}
    _run_process(argv, warm_env)
    warm = [_run_process(argv, warm_env) for _ in range(runs)]
    return {label: _process_figures(samples) for label, samples in (("cold", cold), ("warm", warm))}


def _process_figures(samples: list[tuple[float, float, float]]) -> dict:
    return {"median_s": statistics.median(s for s, _, _ in samples), "max_s": max(s for s, _, _ in samples),
            "peak_rss_mib": max(m for _, m, _ in samples), "cpu_median_s": statistics.median(c for _, _, c in samples)}


def run_latency(cases: list[AccuracyCase], repeat: int = 20, runs: int = 5) -> dict:
    """Whole-process figures (process_latency), then per-stage latency in this process, warm (model
    and table loaded), and scaling with the number of targets."""
    from .retrieve import best_template
    from .synthesize import render
    from .verify.static import static_checks

    process = process_latency(runs)
    case = next(c for c in cases if c.kind == "script")
    intent = extract(case.text)
    profile = get_profile(case.target)
    template = best_template(intent, profile.name)  # builds or opens the table once
    script = render(intent, profile, template, "bench")
    all_targets = suite_targets()
    scaling = {}
    with tempfile.TemporaryDirectory() as out:
        for count in (1, 4, 8, 12):
            scaling[count] = _timed(lambda: port_intent(intent, all_targets[:count], "bench", Path(out)), 3)["median_ms"]
    return {
        "process": process,
        "warm_ms": {
            "extract": _timed(lambda: extract(case.text), repeat),
            "retrieve": _timed(lambda: best_template(intent, profile.name), repeat),
            "synthesize": _timed(lambda: render(intent, profile, template, "bench"), repeat),
            "static_checks": _timed(lambda: static_checks(script, intent, profile), repeat),
        },
        "targets_ms": scaling,
        "templates": len(load_templates()),
        "retrieval_scaling": retrieval_scaling(),
    }


def retrieval_scaling(sizes=(48, 1000, 10_000), repeat: int = 20) -> dict:
    """Query latency of the retrieval search (cluster+framework filter, cosine ranking) as the library
    grows: synthetic libraries made of the real templates' rows and vectors, spread over more and
    more synthetic clusters, with noise on the vectors so no two rows are equal."""
    import numpy as np
    import pyarrow as pa

    from .embedding import embed
    from .retrieve import templates_table
    from .vectordb import connect

    real = templates_table().to_arrow().to_pylist()
    query = embed(["pytorch ddp launched with torchrun on 2 nodes with 4 GPUs per node"])[0]
    rng = np.random.default_rng(0)
    db, timings = connect(), {}
    for size in sizes:
        rows = []
        for i in range(size):
            row = dict(real[i % len(real)])
            vector = np.asarray(row.pop("vector"), dtype=np.float32) + rng.normal(0, 0.02, 384).astype(np.float32)
            rows.append(row | {"cluster": f"{row['cluster']}{i // len(real)}", "vector": vector / np.linalg.norm(vector)})
        name = f"bench_scaling_{size}"
        start = time.perf_counter()
        table = db.create_table(name, data=pa.Table.from_pylist(rows), mode="overwrite")
        built = time.perf_counter() - start
        where = f"cluster = '{real[0]['cluster']}0' AND framework = 'pytorch'"
        search = lambda: table.search(query).distance_type("cosine").where(where, prefilter=True).limit(size).to_list()
        timings[size] = {"build_s": built, **_timed(search, repeat)}
        db.drop_table(name)
    return timings
