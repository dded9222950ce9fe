"""`maple bench`: running a suite with a progress bar, and its report as tables."""

import tempfile
from pathlib import Path
from typing import Optional

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from .bench import load_cases, run_accuracy, run_verified
from .bench_latency import run_latency
from .bench_real import load_real_cases, run_real
from .errors import MapleError


def _golden():
    from .bench_golden import load_golden, run_golden

    return load_golden(), "published scripts", run_golden


def _debug(cases_dir: Optional[Path] = None):
    from .bench_debug import load_debug_cases, run_debug

    return load_debug_cases(cases_dir=cases_dir), "failures", lambda cases, _out, step: run_debug(cases, step)


def _catalog():
    from .bench_catalog import catalog_messages, run_catalog

    return catalog_messages(), "catalogue messages", lambda messages, _out, step: run_catalog(messages, step)


def _trace():
    from .bench_trace import run_trace

    return load_real_cases(), "real scripts traced", run_trace


# Suites shown with a progress bar: () -> (cases, what they are, run(cases, out_dir, step)).
_WITH_BAR = {
    "golden": _golden,
    "debug": _debug,
    "catalog": _catalog,
    "real": lambda: (load_real_cases(), "real scripts", run_real),
    "trace": _trace,
}


def run_suite(suite: str, subset: Optional[int], runs: int, progress: Console, quiet: bool,
              cases_dir: Optional[Path] = None) -> dict:
    """The report of one suite: accuracy, real, golden, debug, latency or verified (on a Slurm cluster)."""
    if suite not in ("accuracy", "latency", "verified", *_WITH_BAR):
        raise MapleError(f"unknown suite {suite!r}; choose accuracy, real, golden, trace, latency, verified, debug or catalog")
    if suite == "verified":
        return run_verified(load_cases(), subset or 8)
    if suite == "latency":
        return run_latency(load_cases(subset), runs=runs)
    if cases_dir and suite != "debug":
        raise MapleError("--cases is for --suite debug (a held-out folder of debug cases)")
    if suite in _WITH_BAR:
        cases, what, run = _debug(cases_dir) if cases_dir else _WITH_BAR[suite]()
        out_dir = Path(tempfile.mkdtemp(prefix=f"maple-{suite}-"))
        return _with_bar(progress, quiet, f"{len(cases)} {what}", len(cases), lambda step: run(cases, out_dir, step))
    cases = load_cases(subset)
    return _with_bar(progress, quiet, f"{len(cases)} cases", len(cases), lambda step: run_accuracy(cases, step))


def _with_bar(console: Console, quiet: bool, title: str, total: int, run):
    """run(step) with a progress bar that step(done, total) moves, on stderr."""
    with Progress(console=console, transient=True, disable=quiet) as bar:
        task = bar.add_task(title, total=total)
        return run(lambda done, _total: bar.update(task, completed=done))


def print_report(suite: str, report: dict, out: Console) -> None:
    if suite == "latency":
        _print_latency(report, out)
    elif suite == "real":
        _print_real(report, out)
    elif suite == "golden":
        _print_golden(report, out)
    elif suite == "trace":
        from .bench_trace import print_trace

        print_trace(report, out)
    elif suite == "debug":
        from .bench_debug import print_debug

        print_debug(report, out)
    elif suite == "catalog":
        from .bench_catalog import print_catalog

        print_catalog(report, out)
    elif suite == "verified":
        for run in report["runs"]:
            colour = "green" if run["ok"] else "red"
            out.print(f"[{colour}]{run['case']}[/]: {run['state']} in {run['seconds']:.0f} s, "
                      f"world size {run['world_size']}", highlight=False)
        out.print(f"verified on the local cluster: {report['passed']}/{report['total']}")
    else:
        _print_accuracy(report, out)


def _print_real(report: dict, out: Console) -> None:
    fields = Table("field", "correct", "accuracy", title=f"extraction of {report['cases']} real scripts "
                   f"({report['sources']} sources)")
    for field, score in report["extraction"].items():
        fields.add_row(field, f"{score['correct']}/{score['total']}", f"{score['accuracy']:.1%}")
    out.print(fields)
    port = report["port"]
    out.print(f"[bold]extraction[/]: {report['extraction_overall']:.1%} of fields; [bold]port[/] to "
              f"{', '.join(port['targets'])} with the right program, arguments and size: "
              f"{port['passed']}/{port['total']} ({port['accuracy']:.1%})")
    for failure in report["failures"]:
        wrong = "; ".join(f"{f} {v['got']!r} != {v['expected']!r}" if isinstance(v, dict) else f"{f}: {v}"
                          for f, v in failure["wrong"].items())
        out.print(f"[red]{failure['case']}[/]: {wrong} {' | '.join(failure['port'])}", highlight=False)


def _print_golden(report: dict, out: Console) -> None:
    table = Table("source", "target", "verdict", "facts", "gate", title=f"{report['ports']} ports of "
                  f"{report['scripts']} published scripts ({', '.join(report['clusters'])})")
    for row in report["rows"]:
        gate = "-" if row["gate_ok"] is None else ("pass" if row["gate_ok"] else "FAIL")
        table.add_row(row["source"], row["target"], row["verdict"], f"{row['facts']['present']}/{row['facts']['total']}", gate)
    out.print(table)
    verdicts, facts, gate = report["verdicts"], report["facts"], report["gate"]
    out.print(f"[bold]verdicts[/]: {', '.join(f'{v} {n}' for v, n in verdicts.items())}; run as is or after an edit "
              f"the header asks for: {report['runs']:.1%}")
    out.print(f"[bold]target facts present[/]: {facts['present']}/{facts['total']} ({facts['ratio']:.1%}); "
              f"[bold]read-back gate[/]: {gate['passed']}/{gate['total']} written ports pass; maple's checks said ok "
              f"for {report['maple_ok']}; [bold]silent wrong ports[/] (gate fails, checks ok): {report['silent']}; "
              f"passed ports that differ from the source by a recorded decision: {report['accepted']}")
    for row in report["rows"]:
        for failure in row["gate_failures"]:
            out.print(f"[red]{row['source']} -> {row['target']}[/]: {failure}", highlight=False)
        for difference in row["accepted"]:
            out.print(f"[yellow]{row['source']} -> {row['target']}[/] (accepted): {difference}", highlight=False)


def _print_accuracy(report: dict, out: Console) -> None:
    generation = report["generation"]
    out.print(f"[bold]generation[/]: {generation['passed']}/{generation['scored']} cases "
              f"({generation['accuracy']:.1%}); {len(report['unsupported'])} known-unsupported combinations")
    fields = Table("field", "correct", "accuracy", title="extraction")
    for field, score in report["extraction"].items():
        fields.add_row(field, f"{score['correct']}/{score['total']}", f"{score['accuracy']:.1%}")
    clusters = Table("cluster", "passed", "accuracy", title="generation per target cluster")
    for cluster, score in report["per_cluster"].items():
        clusters.add_row(cluster, f"{score['passed']}/{score['total']}", f"{score['accuracy']:.1%}")
    out.print(fields, clusters)
    for failure in report["failures"][:20]:
        out.print(f"[red]{failure['case']}[/]: {'; '.join(failure['problems'])}", highlight=False)
    if len(report["failures"]) > 20:
        out.print(f"... and {len(report['failures']) - 20} more in the JSON report")


def _print_latency(report: dict, out: Console) -> None:
    process = report["process"]
    table = Table("command", "cold s", "warm s", "warm CPU s", "cold peak MiB", "warm peak MiB",
                  title=f"whole process, medians of {process['runs']} runs ({process['cpus']} CPUs, "
                        f"load {process['load'][0]:.1f} -> {process['load'][1]:.1f})")
    for name, figures in process["commands"].items():
        cold, warm = figures["cold"], figures["warm"]
        table.add_row(name, f"{cold['median_s']:.2f}", f"{warm['median_s']:.2f}", f"{warm['cpu_median_s']:.2f}",
                      f"{cold['peak_rss_mib']:.0f}", f"{warm['peak_rss_mib']:.0f}")
    out.print(table)
    out.print("the trace gate's cost (traced less static, warm): " + "; ".join(
        f"{scope}: +{cost['wall_s']:.2f} s wall, +{cost['cpu_s']:.2f} s CPU outside the sandboxes" for scope, cost in process["trace_cost"].items()))
    stages = Table("stage", "median ms", "max ms", title=f"in-process stages, warm ({report['templates']} templates)")
    for stage, timing in report["warm_ms"].items():
        stages.add_row(stage, f"{timing['median_ms']:.2f}", f"{timing['max_ms']:.2f}")
    out.print(stages)
    out.print("port to N targets (ms): " + ", ".join(f"{n}: {ms:.0f}" for n, ms in report["targets_ms"].items()))
    out.print("retrieval query vs library size: " + ", ".join(
        f"{n} templates: {t['median_ms']:.1f} ms" for n, t in report["retrieval_scaling"].items()))
