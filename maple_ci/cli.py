"""The `maple` command line. Every command that reports results has --json with a stable shape;
exit code 0 = success, 1 = a check or verification failed, 2 = usage or input error."""

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
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
    entrypoint: Optional[str] = typer.Option(None, help="The training program, when the script does not say (train.py, '-m pkg.train')."),
    gpus_per_node: Optional[int] = typer.Option(None, min=1, help="Devices per node the source used (world size = nodes x this)."),
    account: Optional[str] = typer.Option(None, help="The allocation to charge on the targets."),
    queue: Optional[str] = typer.Option(None, help="The queue, partition or QOS to ask for on the targets."),
    walltime: Optional[str] = typer.Option(None, help="The time limit: HH:MM:SS, or as Slurm writes it (90, 1-12:00:00)."),
    json_output: bool = typer.Option(False, "--json", help="Print the results as JSON."),
) -> None:
    """Port SOURCE to each target cluster: writes scripts/<cluster>/<name>.<sbatch|pbs>."""
    from .extract import slurm_walltime
    from .port import port as run_port
    from .profiles import load_profiles

    targets = [name for item in to + (more_targets or []) for name in item.replace(",", " ").split()]
    if targets == ["all"]:
        targets = sorted(load_profiles())
    if walltime is not None:
        try:
            walltime = slurm_walltime(walltime)
        except ValueError as exc:
            raise MapleError(f"--walltime: {exc}") from exc
    intent, results = run_port(source, targets, out_dir, progress=_progress(json_output),
                               framework=framework, strategy=strategy, nodes=nodes, entrypoint=entrypoint,
                               gpus_per_node=gpus_per_node, account=account, queue=queue, walltime=walltime)
    if json_output:
        _print_json({"intent": intent.model_dump(), "results": [r.model_dump() for r in results]})
    else:
        _print_port_table(results)
        for note in intent.notes:  # what was assumed about the source; each script's header says more
            out.print(f"[dim]note:[/] {escape(note)}", highlight=False)
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
            # Warnings (a skipped linter, an account to fill in) are counted apart, not as passes.
            warned = sum(not c.ok for c in r.checks)
            checks = f"[green]{len(r.checks) - warned} ok[/]" + (f", [yellow]{warned} warning(s)[/]" if warned else "")
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


LLM_HELP = ("When no known fix applies, ask a model for one (validated before use): none, "
            "transformers:<model dir or .gguf>, openai:<base-url>. Default: $MAPLE_LLM, else none.")


def _read_script(path: Path) -> str:
    from .extract import read_script

    if not path.is_file():
        raise MapleError(f"no such file: {path}")
    return read_script(path, str(path))


@app.command()
def verify(
    script: Path = typer.Argument(..., help="A generated (or any) batch script."),
    backend: str = typer.Option("auto", help="slurm | local (PBS emulation) | jacamar | auto (slurm for #SBATCH, else local)."),
    miniapp: Optional[str] = typer.Option(None, help="Mini-app in place of the training program (default: from the framework)."),
    timeout: int = typer.Option(600, min=10, help="Seconds before the run is cancelled and reported as a timeout."),
    adapt: bool = typer.Option(True, help="slurm: drop site directives (account, partition...) so another site's script runs here."),
    in_allocation: bool = typer.Option(False, help="local: run inside the current allocation (a Jacamar CI job), no emulation."),
    cluster: Optional[str] = typer.Option(None, help="The script's cluster (jacamar runner tag; debug knowledge)."),
    ref: str = typer.Option("main", help="jacamar: the branch the center-side project builds."),
    commit: Optional[str] = typer.Option(None, help="jacamar: the full 40-hex id of the commit holding the script."),
    fix: bool = typer.Option(False, "--fix", help="On failure, let the debug agent patch and re-run (at most 5 times)."),
    llm: Optional[str] = typer.Option(None, help=LLM_HELP),
    json_output: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Run a mini-app through SCRIPT on a real scheduler and report whether every rank joined."""
    import tempfile

    from .extract import extract_script
    from .llm import backend_from_setting
    from .verify import miniapp_for, run_verification

    model = backend_from_setting(llm) if fix else None  # a bad setting fails before any run
    text = _read_script(script)
    intent = extract_script(text, base_dir=script.parent, name=str(script))
    if backend == "auto":
        backend = "slurm" if intent.scheduler == "slurm" else "local"
    options = dict(miniapp=miniapp or miniapp_for(intent.framework, intent.strategy), timeout=timeout, adapt=adapt,
                   in_allocation=in_allocation, cluster=cluster or intent.source_cluster, ref=ref, commit=commit)
    progress = _progress(json_output)
    progress(f"verifying {script} with the {backend} backend and the {options['miniapp']} mini-app")
    result = run_verification(backend, script, **options)
    report = None
    if not result.ok and fix:
        from .debug import RunOutcome, debug_loop

        def rerun(candidate: str) -> RunOutcome:
            if candidate == text:
                return RunOutcome(result.ok, result.log)  # the run above; never spend an allocation twice
            with tempfile.TemporaryDirectory() as scratch:
                path = Path(scratch) / script.name
                path.write_text(candidate)
                progress("re-running the patched script")
                outcome = run_verification(backend, path, **options)
                return RunOutcome(outcome.ok, outcome.log)

        report = debug_loop(text, rerun, options["cluster"], path=str(script), llm=model)
        if report.attempts:
            fixed = script.with_name(f"{script.stem}.fixed{script.suffix}")
            fixed.write_text(report.script)
            progress(f"patched script written to {fixed}")
    if json_output:
        _print_json({"result": result.model_dump(), "debug": report.model_dump() if report else None})
    else:
        colour = "green" if result.ok else "red"
        out.print(f"[{colour}]{'passed' if result.ok else 'failed'}[/] ({result.backend}, {result.state}): {result.message}",
                  highlight=False)
        for note in result.notes:
            out.print(f"  note: {note}", highlight=False)
        if not result.ok and result.log:
            out.print(result.log[-3000:], markup=False, highlight=False)
        if report:
            _print_debug_report(report)
    if not (result.ok or (report and report.ok)):
        raise typer.Exit(1)


def _print_debug_report(report) -> None:
    for number, attempt in enumerate(report.attempts, 1):
        out.print(f"[bold]fix {number}[/] ({attempt.entry_id}, line {attempt.line_no}: {attempt.line.strip()})",
                  highlight=False)
        out.print(f"  {attempt.explanation}", highlight=False)
        out.print(attempt.diff, markup=False, highlight=False)
    colour = "green" if report.ok else "yellow"
    out.print(f"[{colour}]{report.stop_reason}[/]: {report.message}", highlight=False)


@app.command()
def debug(
    script: Path = typer.Argument(..., help="The batch script that failed."),
    log: Path = typer.Option(..., "--log", help="The job's output (stdout and stderr)."),
    cluster: Optional[str] = typer.Option(None, help="The script's cluster (default: recognised from the script)."),
    out_path: Optional[Path] = typer.Option(None, "--out", help="Write the patched script here."),
    llm: Optional[str] = typer.Option(None, help=LLM_HELP),
    json_output: bool = typer.Option(False, "--json", help="Print the diagnosis as JSON."),
) -> None:
    """Find the first real error in LOG, match it to known failures, and propose a patch to SCRIPT."""
    from .debug import fix_context, match, next_fix, suggestions
    from .extract import extract_script
    from .llm import backend_from_setting

    model = backend_from_setting(llm)

    text = _read_script(script)
    if not log.is_file():
        raise MapleError(f"no such log file: {log}")
    log_text = log.read_text(errors="replace")  # logs carry binary junk and are often huge; read them whole
    cluster = cluster or extract_script(text, base_dir=script.parent, name=str(script)).source_cluster
    step = next_fix(text, log_text, cluster, fix_context(cluster), str(script), llm=model)
    hints = match(step.failure, cluster) if step.failure and not step.attempt else []
    fixes = suggestions(text, step.script, str(script)) if step.attempt else []
    if out_path and step.attempt:
        out_path.write_text(step.script)
    if json_output:
        _print_json({
            "failure": step.failure.model_dump() if step.failure else None,
            "fix": step.attempt.model_dump() if step.attempt else None,
            "stop": step.stop, "message": step.message,
            "suggestions": [s.model_dump() for s in fixes],
            "similar": [{"id": m.entry.id, "score": m.score, "explanation": m.entry.explanation} for m in hints],
        })
    else:
        if step.failure:
            f = step.failure
            out.print(f"[bold]first error[/] (line {f.line_no}, {f.category}): {f.line.strip()}", highlight=False)
        if step.attempt:
            out.print(f"[bold]known fix[/] {step.attempt.entry_id}: {step.attempt.explanation}", highlight=False)
            out.print(step.attempt.diff, markup=False, highlight=False)
            if out_path:
                err.print(f"patched script written to {out_path}")
        else:
            out.print(f"[yellow]{step.stop}[/]: {step.message}", highlight=False)
            for m in hints:
                out.print(f"  similar known case {m.entry.id} ({m.score:.2f}): {m.entry.explanation}", highlight=False)
    if not step.attempt:
        raise typer.Exit(1)


@app.command()
def bench(
    suite: str = typer.Option("accuracy", help="accuracy | real | latency | verified (runs on a Slurm cluster)"),
    subset: Optional[int] = typer.Option(None, min=1, help="Run an even spread of N cases instead of all."),
    output: Path = typer.Option(Path("bench-results.json"), help="Where the full JSON report goes."),
    runs: int = typer.Option(5, min=1, help="latency: whole-process runs per command, cold and warm (medians)."),
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Measure accuracy over the case suite (benchmarks/accuracy/suite.yaml) or per-stage latency."""
    from .bench_cli import print_report, run_suite

    report = run_suite(suite, subset, runs, progress=err, quiet=json_output)
    output.write_text(json.dumps(report, indent=2))
    if json_output:
        _print_json(report)
    else:
        print_report(suite, report, out)
    err.print(f"full report: {output}")
    if report.get("failures") or report.get("passed", 0) < report.get("total", 0):
        raise typer.Exit(1)


@app.command()
def action() -> None:
    """Run as the GitHub Action: answer the event this job was started for (comment, push, schedule)."""
    import os

    from .github.action import apply_inputs, run_action
    from .github.config import DEFAULT_PATH, Config, load_config
    from .github.pipeline import Pipeline, git_checkout
    from .llm import backend_from_setting
    from .profiles import load_profiles

    apply_inputs()
    known = sorted(load_profiles())
    # Read from the workspace, the default branch: a PR cannot change what the bot is allowed to do.
    try:
        config, config_error = load_config(os.environ.get("MAPLE_CONFIG") or DEFAULT_PATH, known, os.environ), None
    except MapleError as error:  # answered where the request came from, then the job fails with it
        config, config_error = Config(), str(error)
    pipeline = Pipeline(config, git_checkout(Path(os.environ.get("GITHUB_WORKSPACE", "."))), model=backend_from_setting())
    raise typer.Exit(run_action(pipeline.port, known, config.sources, config.targets,
                                verify=pipeline.verify, report=config.schedule, config_error=config_error))


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
