"""`maple trace SCRIPT [--cluster C] [--nodes N] [--json] [-- ARGS]`: what every rank would run."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from ..cli_output import err, out, print_json


def run_trace(args) -> int:
    """Run SCRIPT with bash on an emulated allocation and show what every rank would run (the
    program is never run; the script's own commands run only in a sandbox)."""
    from . import trace_script

    trace = trace_script(Path(args.script), cluster=args.cluster, nodes=args.nodes, args=tuple(args.args),
                         trusted=args.trusted)
    if args.json_output:
        data = asdict(trace)
        data["world"] = trace.world()
        print_json(data)
        return 0
    _print(trace)
    return 0


def _print(trace) -> None:
    alloc = trace.allocation
    out.print(f"[bold]{escape(trace.script)}[/] on {len(alloc.nodes)} node(s) x {alloc.gpus_per_node} devices "
              f"({alloc.scheduler}); traced in {trace.seconds:.2f} s"
              + ("" if trace.sandboxed else " [yellow](not sandboxed: --trusted)[/]"), highlight=False)
    table = Table("rank", "node", "via", "devices", "program and arguments", "variables it is given")
    for rank in trace.ranks:
        env = " ".join(f"{k}={v}" for k, v in sorted(rank.env.items()))
        table.add_row("-" if rank.rank is None else str(rank.rank), rank.node, " > ".join(rank.via) or "-",
                      rank.devices, escape(" ".join(rank.argv)), escape(env))
    out.print(table)
    for argv in trace.not_run:
        out.print(f"[dim]not run:[/] {escape(' '.join(argv))}", highlight=False)
    for argv in trace.submitted:
        out.print(f"[dim]submitted:[/] {escape(' '.join(argv))}", highlight=False)
    if not trace.ranks:
        err.print("[yellow]the trace saw no program start[/] (the script exits early, or runs it in a way the "
                  "trace does not follow)")
    if trace.exit_code:
        err.print(f"[yellow]the script exited {trace.exit_code} under the trace:[/] {escape(trace.stderr[-800:])}",
                  highlight=False)


def add_parser(commands, command) -> None:
    parser = command(commands, "trace", run_trace, "What every rank of a script would run (bash, emulated allocation).",
                     "Print the trace as JSON.")
    parser.add_argument("script", metavar="SCRIPT", help="The launch script.")
    parser.add_argument("--cluster", help="Emulate this cluster's nodes (devices, cores, scheduler).")
    parser.add_argument("--nodes", type=int, help="Nodes in the allocation (default: the directives', else 2).")
    parser.add_argument("--trusted", action="store_true",
                        help="Your own script: trace it even without bubblewrap's sandbox (never for others' content).")
    parser.add_argument("args", nargs="*", metavar="ARGS", help="Arguments after --, as the submit line gives them.")
