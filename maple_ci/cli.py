"""The `maple` command line. Every command that reports results has --json with a stable shape;
exit code 0 = success, 1 = a check or verification failed, 2 = usage or input error."""

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from . import __version__
from .errors import MapleError

app = typer.Typer(
    help="Port deep-learning launch scripts across HPC GPU clusters, offline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
templates_app = typer.Typer(help="Browse the launch-template library.", no_args_is_help=True)
app.add_typer(templates_app, name="templates")

# Logs and pipes are not terminals: rich would wrap them at 80 columns and cut paths.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def _print_json(data) -> None:
    out.print_json(json.dumps(data), highlight=False) if out.is_terminal else print(json.dumps(data, indent=2))


def _progress(json_output: bool):
    """A status line on stderr for long steps (model load, index build); silent for --json."""
    if json_output or not err.is_terminal:
        return lambda message: None
    return lambda message: err.log(message, highlight=False)


@app.callback(invoke_without_command=True)
def _version(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    if version:
        print(f"maple-ci {__version__}")
        raise typer.Exit()


@app.command()
def extract(
    source: str = typer.Argument(..., help="A launch script path, or a request in plain words."),
    json_output: bool = typer.Option(False, "--json", help="Print the JobIntent as JSON."),
) -> None:
    """Extract the job intent (nodes, GPUs, launcher, framework...) from a script or a request."""
    from .extract import extract as run_extract, load_source

    name, text = load_source(source)
    intent = run_extract(text, name)
    if json_output:
        _print_json(intent.model_dump())
        return
    table = Table(title=f"JobIntent of {name}", show_header=False)
    for field, value in intent.model_dump().items():
        table.add_row(field, "" if value in (None, [], {}) else str(value))
    out.print(table)
    if intent.missing:
        err.print(f"[yellow]missing for a port:[/] {', '.join(intent.missing)}")


@app.command()
def clusters(json_output: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """List the clusters maple-ci knows, with their scheduler, GPUs and launcher."""
    from .profiles import load_profiles

    profiles = load_profiles().values()
    if json_output:
        _print_json([p.model_dump() for p in profiles])
        return
    table = Table("cluster", "center", "scheduler", "devices/node", "GPU", "launcher", "docs")
    for p in profiles:
        table.add_row(p.name, p.center, p.scheduler, str(p.devices_per_node), p.gpu_model, p.default_launcher, p.docs_url)
    out.print(table)


@app.command(context_settings={"allow_interspersed_args": True})
def port(
    source: str = typer.Argument(..., help="The launch script to port (or a request in plain words)."),
    more_targets: Optional[list[str]] = typer.Argument(None, metavar="[CLUSTER]...", show_default=False,
                                                       help="More target clusters (after --to)."),
    to: list[str] = typer.Option([], "--to", help="Target clusters: --to perlmutter aurora, or 'all'."),
    out_dir: Path = typer.Option(Path("scripts"), "--out", help="Where scripts/<cluster>/<name> go."),
    framework: Optional[str] = typer.Option(None, help="Override the framework (pytorch, deepspeed, accelerate)."),
    strategy: Optional[str] = typer.Option(None, help="Override the strategy (ddp, fsdp, zero3...)."),
    nodes: Optional[int] = typer.Option(None, min=1, help="Override the node count."),
    json_output: bool = typer.Option(False, "--json", help="Print the results as JSON."),
) -> None:
    """Port SOURCE to each target cluster: writes scripts/<cluster>/<name>.<sbatch|pbs>."""
    from .port import port as run_port
    from .profiles import load_profiles

    targets = [name for item in to + (more_targets or []) for name in item.replace(",", " ").split()]
    if targets == ["all"]:
        targets = sorted(load_profiles())
    intent, results = run_port(source, targets, out_dir, progress=_progress(json_output),
                               framework=framework, strategy=strategy, nodes=nodes)
    if json_output:
        _print_json({"intent": intent.model_dump(), "results": [r.model_dump() for r in results]})
    else:
        _print_port_table(results)
    if any(r.status != "ok" for r in results):
        raise typer.Exit(1)


def _print_port_table(results) -> None:
    table = Table("cluster", "template", "checks", "path")
    for r in results:
        failed = [c for c in r.checks if not c.ok and c.severity == "error"]
        if r.status == "unsupported":
            checks = "[yellow]unsupported[/]"
        elif failed:
            checks = f"[red]{len(failed)} failed[/]"
        else:
            checks = f"[green]{len(r.checks)} ok[/]"
        table.add_row(r.cluster, r.template or "-", checks, r.path or r.reason)
    out.print(table)
    for r in results:
        for c in r.checks:
            if not c.ok:
                colour = "red" if c.severity == "error" else "yellow"
                where = f" (line {c.line})" if c.line else ""
                out.print(f"[{colour}]{r.cluster}: {c.name}{where}:[/] {c.message}", highlight=False)
        if r.status == "unsupported":
            out.print(f"[yellow]{r.cluster}: not generated:[/] {r.reason}", highlight=False)


@templates_app.command("list")
def templates_list(
    cluster: Optional[str] = typer.Option(None, help="Only this cluster."),
    framework: Optional[str] = typer.Option(None, help="Only this framework."),
    json_output: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """List launch templates with their metadata."""
    from .retrieve import list_templates

    templates = list_templates(cluster, framework)
    if json_output:
        _print_json([t.model_dump() for t in templates])
        return
    table = Table("id", "cluster", "framework", "strategy", "launcher", "supported")
    for t in templates:
        table.add_row(t.id, t.cluster, t.framework, t.strategy, t.launcher, "yes" if t.supported else f"no: {t.reason}")
    out.print(table)


@templates_app.command("show")
def templates_show(template_id: str = typer.Argument(..., help="A template id from `maple templates list`.")) -> None:
    """Print one template's source."""
    from .library import get_template, launch_dir

    out.print((launch_dir() / get_template(template_id).path).read_text(), markup=False, highlight=False)


@templates_app.command("search")
def templates_search(
    query: str = typer.Argument(..., help="What you are looking for, in words."),
    cluster: Optional[str] = typer.Option(None, help="Only this cluster."),
    k: int = typer.Option(5, "-k", min=1, help="How many results."),
    json_output: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Search the library by meaning (embedding similarity)."""
    from .retrieve import search

    hits = search(query, cluster, k)
    if json_output:
        _print_json([{"score": h.score, **h.template.model_dump()} for h in hits])
        return
    table = Table("score", "id", "description")
    for h in hits:
        table.add_row(f"{h.score:.3f}", h.template.id, h.template.description)
    out.print(table)


@app.command()
def bench(
    suite: str = typer.Option("accuracy", help="accuracy | latency"),
    subset: Optional[int] = typer.Option(None, min=1, help="Run an even spread of N cases instead of all."),
    output: Path = typer.Option(Path("bench-results.json"), help="Where the full JSON report goes."),
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Measure accuracy over the case suite (benchmarks/accuracy/suite.yaml) or per-stage latency."""
    from rich.progress import Progress

    from .bench import load_cases, run_accuracy, run_latency

    if suite not in ("accuracy", "latency"):
        raise MapleError(f"unknown suite {suite!r}; choose accuracy or latency")
    cases = load_cases(subset)
    if suite == "latency":
        report = run_latency(cases)
    else:
        with Progress(console=err, transient=True, disable=json_output) as bar:
            task = bar.add_task(f"{len(cases)} cases", total=len(cases))
            report = run_accuracy(cases, lambda done, total: bar.update(task, completed=done))
    output.write_text(json.dumps(report, indent=2))
    if json_output:
        _print_json(report)
    elif suite == "latency":
        _print_latency(report)
    else:
        _print_accuracy(report)
    err.print(f"full report: {output}")
    if suite == "accuracy" and report["failures"]:
        raise typer.Exit(1)


def _print_accuracy(report: dict) -> None:
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


def _print_latency(report: dict) -> None:
    table = Table("stage", "median ms", "max ms", title=f"warm latency ({report['templates']} templates)")
    for stage, timing in report["warm_ms"].items():
        table.add_row(stage, f"{timing['median_ms']:.2f}", f"{timing['max_ms']:.2f}")
    out.print(table)
    cold = report["cold_start_s"]
    out.print(f"cold start to first script: {cold['empty_cache']:.2f} s (index built), {cold['cached_index']:.2f} s (cached)")
    out.print("port to N targets (ms): " + ", ".join(f"{n}: {ms:.0f}" for n, ms in report["targets_ms"].items()))
    out.print(f"peak RSS: {report['peak_rss_mb']:.0f} MiB")


@app.command()
def action() -> None:
    """Run as the GitHub Action: answer the event this job was started for (comment, push, schedule)."""
    import os

    from .github.action import run_action
    from .github.config import DEFAULT_PATH, load_config
    from .github.pipeline import Pipeline, git_checkout
    from .profiles import load_profiles

    known = sorted(load_profiles())
    # Read from the workspace, the default branch: a PR cannot change what the bot is allowed to do.
    config = load_config(os.environ.get("MAPLE_CONFIG") or DEFAULT_PATH, known, os.environ)
    pipeline = Pipeline(config, git_checkout(Path(os.environ.get("GITHUB_WORKSPACE", "."))))
    raise typer.Exit(run_action(pipeline.port, known, config.sources, config.targets,
                                verify=pipeline.verify, report=config.schedule))


def main() -> None:
    import click

    try:
        code = app(standalone_mode=False)
    except MapleError as exc:
        err.print(f"[red]error:[/] {exc}", highlight=False)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:  # usage errors: exit code 2
        exc.show()
        sys.exit(exc.exit_code)
    except click.Abort:
        sys.exit(130)
    sys.exit(code or 0)
