"""`maple cluster discover` and `maple cluster check`: the `cluster` command group."""

from __future__ import annotations

import datetime
import socket
from pathlib import Path

from rich.markup import escape

from ..cli_output import err, out, print_json
from ..errors import MapleError


def _probe(recorded: Path | None):
    from .probe import Live, Recorded

    if recorded is None:
        return Live()
    if not recorded.is_dir():
        raise MapleError(f"--from {recorded}: not a folder of recorded outputs")
    return Recorded(recorded)


def discover_command(args) -> int:
    """Write a cluster profile from what this login node's scheduler, modules and GPUs say (read-only
    queries); every fact names its query and date, and what none could say is marked unconfirmed."""
    from . import discover
    from .profile import render

    facts = discover(_probe(args.recorded))
    name = args.name or facts.get("cluster_name", None) and facts["cluster_name"].value.lower()
    if not name:
        raise MapleError("no cluster name from the scheduler: give one with --name")
    path = args.out or Path("templates") / "clusters" / f"{name}.yaml"
    if path.exists() and not args.force:
        raise MapleError(f"{path} exists; --force replaces it")
    host = "recorded outputs" if args.recorded else socket.gethostname()
    text = render(facts, name, datetime.date.today().isoformat(), host, args.docs_url or "")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        raise MapleError(f"--out {path}: {exc.strerror}") from exc
    missing = sum(line.count("# unconfirmed") for line in text.splitlines())
    out.print(f"wrote {escape(str(path))} ({missing} values unconfirmed)", highlight=False)
    out.print(f"`maple port --to {name}` finds it with MAPLE_CLUSTERS_DIR={escape(str(path.parent.resolve()))}", highlight=False)
    return 0


def check_command(args) -> int:
    """Compare a listed cluster profile with what the live system says: exit 1 on drift (a queue
    renamed, a limit changed, a module gone)."""
    from . import Fact, discover
    from .check import drift, unchecked
    from .probe import command_line
    from ..profiles import get_profile

    profile = get_profile(args.cluster)
    probe = _probe(args.recorded)
    facts = discover(probe)
    listing = probe("modules")
    module_fact = Fact(listing, command_line("modules"), confirmed=listing is not None)
    found, skipped = drift(profile, facts, module_fact), unchecked(facts)
    if args.json_output:
        print_json({"cluster": profile.name, "drift": found, "not_checked": skipped})
    else:
        for line in found:
            err.print(f"[red]drift:[/] {escape(line)}", highlight=False)
        if skipped:
            out.print(f"not checked (no answer here): {escape(', '.join(skipped))}", highlight=False)
        if not found:
            out.print(f"{profile.name}: no drift", highlight=False)
    return 1 if found else 0


def add_parser(commands, command) -> None:
    """The `cluster` group on the `maple` parser; `command` is cli._command."""
    group = commands.add_parser("cluster", help="Write or check a cluster's profile on its login node.",
                                description="Write or check a cluster's profile on its login node.")
    group.set_defaults(usage=group)
    sub = group.add_subparsers(title="commands", metavar="COMMAND")
    recorded = {"dest": "recorded", "metavar": "DIR", "type": Path,
                "help": "Read the queries' recorded outputs from DIR (<query>.txt) instead of running them."}
    parser = command(sub, "discover", discover_command, "Write a profile from this login node's answers.")
    parser.add_argument("--name", help="The cluster's name (default: the scheduler's cluster name).")
    parser.add_argument("--out", type=Path, metavar="FILE", help="Where to write it (default: templates/clusters/NAME.yaml).")
    parser.add_argument("--docs-url", metavar="URL", help="The center's documentation page for this machine.")
    parser.add_argument("--from", **recorded)
    parser.add_argument("--force", action="store_true", help="Replace an existing file.")
    parser = command(sub, "check", check_command, "Compare a profile with the live system.", "Print the report as JSON.")
    parser.add_argument("cluster", metavar="CLUSTER", help="A listed cluster (maple clusters).")
    parser.add_argument("--from", **recorded)
