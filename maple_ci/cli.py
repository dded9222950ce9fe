"""The `maple` command line. Every command that reports results has --json with a stable shape;
exit code 0 = success, 1 = a check or verification failed, 2 = usage or input error.

argparse, not a decorator framework: `maple extract` should cost little more than the extraction,
and each command imports its agents only when it runs."""

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Optional, get_args

from rich.markup import escape
from rich.table import Table

from . import __version__, cli_setup, cli_templates, schedulers
from .cli_output import (debug_json, err, out, print_debug_step, print_diagnosis, print_json, print_port_table,
                         print_verified, progress)
from .errors import MapleError
from .intent import Framework
from .files import write_inside


def extract(args) -> int:
    """Extract the job intent (nodes, GPUs, launcher, framework...) from a script or a request."""
    from .extract import extract as run_extract, load_source

    name, text = load_source(args.source)
    intent = asdict(run_extract(text, name))
    if args.json_output:
        print_json(intent)
        return 0
    table = Table(title=f"JobIntent of {name}", show_header=False)
    for field, value in intent.items():
        table.add_row(field, "" if value in (None, [], {}) else str(value))
    out.print(table)
    if intent["missing"]:
        err.print(f"[yellow]missing for a port:[/] {', '.join(intent['missing'])}")
    return 0


def clusters(args) -> int:
    """List the clusters maple-ci knows, with their scheduler, GPUs and launcher."""
    from .profiles import clusters_markdown, load_profiles

    if args.markdown:  # the table docs/machines.md shows (docs/hooks.py)
        print(clusters_markdown(), end="")
        return 0
    profiles = load_profiles().values()
    if args.json_output:
        print_json([p.model_dump() for p in profiles])
        return 0
    table = Table("cluster", "center", "scheduler", "devices/node", "GPU", "launcher", "docs")
    for p in profiles:
        table.add_row(p.name, p.center, p.scheduler, str(p.devices_per_node), p.gpu_model, p.default_launcher, p.docs_url)
    out.print(table)
    return 0


def _walltime(given: str | None) -> str | None:
    """--walltime as HH:MM:SS, from any form Slurm takes."""
    from .extract import slurm_walltime

    if given is None:
        return None
    try:
        return slurm_walltime(given)
    except ValueError as exc:
        raise MapleError(f"--walltime: {exc}") from exc


def port(args) -> int:
    """Port SOURCE to each target cluster: writes scripts/<cluster>/<name>.<sbatch|pbs>."""
    from .extract import program_line
    from .port import port as run_port
    from .python_env import parse_python_envs

    targets = _targets(args.to)
    walltime = _walltime(args.walltime)
    entrypoint, program_args = program_line(args.entrypoint, args.program_args)
    intent, results = run_port(args.source, targets, args.out_dir, progress=progress(args.json_output),
                               framework=args.framework, strategy=args.strategy, nodes=args.nodes,
                               entrypoint=entrypoint, script_args=program_args, gpus_per_node=args.gpus_per_node,
                               account=args.account,
                               queue=args.queue, walltime=walltime, python_envs=parse_python_envs(args.python_env),
                               trace=_trace_gate(args.trace, args.json_output))
    _print_port(intent, results, args.json_output)
    return 1 if any(r.status != "ok" for r in results) else 0


def _trace_gate(asked: bool | None, json_output: bool) -> bool:
    """--trace / --no-trace as given; by default the gate runs wherever the trace is isolated."""
    from .trace.sandbox import bwrap

    if asked is not None:
        return asked
    if bwrap() is None and not json_output:
        err.print("note: not traced: bubblewrap is not installed (apt-get install bubblewrap); --trace traces "
                  "your own script without it, --no-trace says you know", highlight=False)
    return bwrap() is not None


def _targets(given: list[str]) -> list[str]:
    """The --to values (repeated or comma-separated), or every cluster for `all`."""
    from .profiles import load_profiles

    targets = [name for item in given for name in item.replace(",", " ").split()]
    return sorted(load_profiles()) if targets == ["all"] else targets


def _print_port(intent, results, json_output: bool) -> None:
    if json_output:
        print_json({"intent": asdict(intent), "results": [r.model_dump() for r in results]})
        return
    print_port_table(results)
    for note in intent.notes:  # what was assumed about the source; each script's header says more
        out.print(f"[dim]note:[/] {escape(note)}", highlight=False)


LLM_HELP = ("When no known fix applies, ask a model for one (validated before use): none, "
            "transformers:<model dir or .gguf>, openai:<base-url>. Default: $MAPLE_LLM, else none.")


def _read_script(path: Path) -> str:
    from .extract import read_script

    if not path.is_file():
        raise MapleError(f"no such file: {path}")
    return read_script(path, str(path))


def verify(args) -> int:
    """Run a mini-app through SCRIPT on a real scheduler and report whether every rank joined."""
    from .extract import extract_script
    from .llm import backend_from_setting
    from .pipeline import script_runner, verify_and_debug
    from .verify import miniapp_for
    from .verify.record import gate_failures, load_record

    model = backend_from_setting(args.llm) if args.fix else None  # a bad setting fails before any run
    script = args.script
    text = _read_script(script)
    intent = extract_script(text, base_dir=script.parent, name=str(script))
    record = load_record(script, text)  # a port maple wrote is read back against its source first
    if record and record.legacy:
        err.print(f"read-back record: {record.legacy} (the old file beside the port; `maple port` now keeps the record "
                  "in the script's header, so the file can go once the script is ported again)", highlight=False, markup=False)
    if record and (gate := gate_failures(text, record)):
        err.print("[red]failed[/] (read-back gate, no job run): " + "; ".join(gate), highlight=False, markup=True)
        return 1
    backend = _verify_backend(args.backend, intent.scheduler)
    if args.program and args.miniapp:
        raise MapleError("--program runs the script's own program; --miniapp names one to run instead: give one", exit_code=2)
    miniapp = None if args.program else args.miniapp or miniapp_for(intent.framework, intent.strategy)
    options = dict(miniapp=miniapp, timeout=args.timeout,
                   adapt=args.adapt, in_allocation=args.in_allocation, cluster=args.cluster or intent.source_cluster,
                   ref=args.ref, commit=args.commit)
    progress(args.json_output)(f"verifying {script} with the {backend} backend and "
                               + (f"the {miniapp} mini-app" if miniapp else "its own program"))
    verified = verify_and_debug(text, script_runner(backend, script, options, in_place=True), cluster=options["cluster"],
                                path=str(script), fix=args.fix, model=model)
    if verified.report and verified.report.attempts:
        fixed = script.with_name(f"{script.stem}.fixed{script.suffix}")
        write_inside(script.parent, Path(fixed.name), verified.report.script)  # follows no planted symlink
        progress(args.json_output)(f"patched script written to {fixed}")
    print_verified(verified, args.json_output)
    return 0 if verified.ok else 1


def _verify_backend(given: str, scheduler: Optional[str]) -> str:
    """--backend, or for auto the scheduler's own backend where it has one (Slurm), else emulation."""
    if given != "auto":
        return given
    unit = schedulers.find(scheduler)
    return (unit and unit.verify_backend) or "local"


def _read_log(log: Path) -> str:
    if not log.is_file():
        raise MapleError(f"no such log file: {log}")
    return log.read_text(errors="replace")  # logs carry binary junk and are often huge; read them whole


def debug(args) -> int:
    """Find the first real error in LOG, match it to known failures, and propose a patch to SCRIPT."""
    import os

    from .debug import diagnose, fix_context, match, next_fix, suggestions
    from .extract import extract_script
    from .llm import backend_from_setting

    model = backend_from_setting(args.llm)
    script, log, out_path = args.script, args.log, args.out_path
    text = _read_script(script)
    log_text = _read_log(log)
    cluster = args.cluster or extract_script(text, base_dir=script.parent, name=str(script)).source_cluster
    step = next_fix(text, log_text, cluster, fix_context(cluster), str(script), llm=model)
    hints = match(step.failure, cluster) if step.failure and not step.attempt else []
    found = diagnose(text, log_text, cluster, docs=True, online=os.environ if args.online else None, llm=model)
    fixes = suggestions(text, step.script, str(script)) if step.attempt else []
    if out_path and step.attempt:
        out_path.write_text(step.script)
    _print_debug(args.json_output, step, fixes, hints, found, out_path)
    return 0 if step.attempt else 1


def _print_debug(json_output: bool, step, fixes, hints, found, out_path: Optional[Path]) -> None:
    if json_output:
        print_json(debug_json(step, fixes, hints, found))
        return
    print_debug_step(step, hints, out_path)
    print_diagnosis(found)


def bench(args) -> int:
    """Measure accuracy over the case suite (benchmarks/accuracy/suite.yaml) or per-stage latency."""
    from .bench_cli import print_report, run_suite

    report = run_suite(args.suite, args.subset, args.runs, progress=err, quiet=args.json_output, cases_dir=args.cases)
    args.output.write_text(json.dumps(report, indent=2))
    if args.json_output:
        print_json(report)
    else:
        print_report(args.suite, report, out)
    err.print(f"full report: {args.output}")
    return 1 if report.get("failures") or report.get("passed", 0) < report.get("total", 0) else 0


def action(args) -> int:
    """Run as the GitHub Action: answer the event this job was started for (comment, push, schedule)."""
    import os

    from .github.action import apply_inputs, run_configured
    from .github.pipeline import Pipeline, git_checkout
    from .github.repo_profiles import use_repository_profiles
    from .llm import backend_from_setting
    from .profiles import load_profiles

    apply_inputs()
    root = Path(os.environ.get("GITHUB_WORKSPACE", "."))
    if (os.environ.get("MAPLE_ACTION_MODE") or "port") != "port":  # the trace gate's own jobs
        from .github.action import run_trace_mode

        return run_trace_mode(os.environ["MAPLE_ACTION_MODE"], root)
    use_repository_profiles(root)  # the default branch's .github/maple/clusters/*.yaml, checked
    return run_configured(root, sorted(load_profiles()),
                          lambda config: Pipeline(config, git_checkout(root), model=backend_from_setting()))


def _at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is less than {minimum}")
        return value
    return parse


def _command(commands, name: str, run, help: str, json_help: str = "") -> argparse.ArgumentParser:
    """A subcommand whose description is run's docstring; --json when json_help says what it prints."""
    parser = commands.add_parser(name, help=help, description=run.__doc__)
    parser.set_defaults(run=run)
    if json_help:
        parser.add_argument("--json", dest="json_output", action="store_true", help=json_help)
    return parser


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="maple", description="Port deep-learning launch scripts across HPC GPU clusters, offline.",
        epilog="Exit codes: 0 success, 1 a check or verification failed, 2 a usage or input error.")
    parser.add_argument("--version", action="version", version=f"maple-ci {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    command = _command(commands, "extract", extract, "The JobIntent of a script or a request.", "Print the JobIntent as JSON.")
    command.add_argument("source", metavar="SOURCE", help="A launch script path, or a request in plain words.")

    command = _command(commands, "clusters", clusters, "The clusters maple-ci knows.", "Print as JSON.")
    command.add_argument("--markdown", action="store_true", help="Print the supported-machines table as Markdown.")

    command = _command(commands, "port", port, "Port a script to other clusters.", "Print the results as JSON.")
    command.add_argument("source", metavar="SOURCE", help="The launch script to port (or a request in plain words).")
    command.add_argument("--to", nargs="+", action="extend", default=[], metavar="CLUSTER",
                         help="Target clusters: --to perlmutter aurora, or 'all'; 'skypilot' writes a SkyPilot task.")
    command.add_argument("--out", dest="out_dir", metavar="DIR", type=Path, default=Path("scripts"),
                         help="Where scripts/<cluster>/<name> go (default: scripts).")
    command.add_argument("--framework", choices=get_args(Framework), metavar="NAME",
                         help=f"Override the framework: {', '.join(get_args(Framework))}.")
    command.add_argument("--strategy", help="Override the strategy (ddp, fsdp, zero3...).")
    command.add_argument("--nodes", metavar="N", type=_at_least(1), help="Override the node count.")
    command.add_argument("--entrypoint", metavar="COMMAND", help="The training program and its arguments, when the script "
                         "does not say or to replace them: 'train.py --config x', '-m pkg.train'.")
    command.add_argument("--program-args", metavar="ARGS", help="The program's arguments, replacing the script's: '--config x --lr 3e-4'.")
    command.add_argument("--gpus-per-node", metavar="G", type=_at_least(1), help="Devices per node the source used (world size = nodes x this).")
    command.add_argument("--account", help="The allocation to charge on the targets.")
    command.add_argument("--queue", help="The queue, partition or QOS to ask for on the targets.")
    command.add_argument("--walltime", help="The time limit: HH:MM:SS, or as Slurm writes it (90, 1-12:00:00).")
    command.add_argument("--python-env", action="append", default=[], metavar="[CLUSTER=]PATH",
                         help="Your conda env or venv on targets whose center provides no PyTorch (Frontier, "
                              "Lonestar6, Stampede3, Anvil, Bridges-2); CLUSTER=PATH for one target. Repeatable.")
    command.add_argument("--trace", action=argparse.BooleanOptionalAction, default=None,
                         help="Check each port by tracing it and the source (`maple trace`): a difference the "
                              "port's header does not name fails the port, naming it. On by default where bubblewrap "
                              "can isolate the trace; --trace traces also without it (the script is yours); "
                              "--no-trace skips it.")

    cli_templates.register(commands, _command, _at_least)

    command = _command(commands, "verify", verify, "Run a mini-app through a batch script.", "Print the result as JSON.")
    command.add_argument("script", metavar="SCRIPT", type=Path, help="A generated (or any) batch script.")
    command.add_argument("--backend", default="auto",
                         help="slurm | local (PBS emulation) | jacamar | auto (slurm for #SBATCH, else local).")
    command.add_argument("--miniapp", help="Mini-app in place of the training program (default: from the framework).")
    command.add_argument("--program", action="store_true",
                         help="Run the script's own training program, not a mini-app; its loss and throughput lines are read.")
    command.add_argument("--timeout", type=_at_least(10), default=600,
                         help="Seconds before the run is cancelled and reported as a timeout (default: 600).")
    command.add_argument("--adapt", action=argparse.BooleanOptionalAction, default=True,
                         help="slurm: drop site directives (account, partition...) so another site's script runs here.")
    command.add_argument("--in-allocation", action=argparse.BooleanOptionalAction, default=False,
                         help="local: run inside the current allocation (a Jacamar CI job), no emulation.")
    command.add_argument("--cluster", help="The script's cluster (jacamar runner tag; debug knowledge).")
    command.add_argument("--ref", default="main", help="jacamar: the branch the center-side project builds.")
    command.add_argument("--commit", help="jacamar: the full 40-hex id of the commit holding the script.")
    command.add_argument("--fix", action="store_true", help="On failure, let the debug agent patch and re-run (at most 5 times).")
    command.add_argument("--llm", help=LLM_HELP)

    command = _command(commands, "debug", debug, "Diagnose a failed job's log.", "Print the diagnosis as JSON.")
    command.add_argument("script", metavar="SCRIPT", type=Path, help="The batch script that failed.")
    command.add_argument("--log", metavar="LOG", type=Path, required=True, help="The job's output (stdout and stderr).")
    command.add_argument("--cluster", help="The script's cluster (default: recognised from the script).")
    command.add_argument("--out", dest="out_path", metavar="FIXED", type=Path, help="Write the patched script here.")
    command.add_argument("--llm", help=LLM_HELP)
    command.add_argument("--online", action="store_true",
                         help="Also search GitHub issues for the error (GITHUB_API_URL, GITHUB_TOKEN); offline by default.")

    command = _command(commands, "bench", bench, "Measure accuracy and latency.", "Print the report as JSON.")
    command.add_argument("--suite", default="accuracy", help="accuracy | real | golden | trace | latency | verified (runs on a Slurm cluster) | debug | catalog.")
    command.add_argument("--subset", type=_at_least(1), help="Run an even spread of N cases instead of all.")
    command.add_argument("--output", type=Path, default=Path("bench-results.json"), help="Where the full JSON report goes.")
    command.add_argument("--cases", type=Path, help="debug: score the cases in this folder (a held-out set) instead.")
    command.add_argument("--runs", type=_at_least(1), default=5,
                         help="latency: whole-process runs per command, cold and warm (medians; default: 5).")

    from .trace.cli import add_parser as add_trace

    add_trace(commands, _command)
    from .discover.cli import add_parser as add_cluster

    add_cluster(commands, _command)
    _command(commands, "action", action, "Run as the GitHub Action.")
    cli_setup.register(commands, _command)
    parser.set_defaults(usage=parser)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)  # a usage error prints the usage and exits 2
    if not hasattr(args, "run"):  # `maple` or `maple templates` alone
        args.usage.print_help()
        sys.exit(2)
    try:
        code = args.run(args)
    except MapleError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)  # a message may hold [brackets]
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(code)
