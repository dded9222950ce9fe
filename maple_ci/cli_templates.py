"""`maple templates list | show | search`: browsing the launch-template library (library.py, retrieve.py)."""

from __future__ import annotations

from rich.table import Table

from .cli_output import out, print_json


def templates_list(args) -> int:
    """List launch templates with their metadata."""
    from .retrieve import list_templates

    templates = list_templates(args.cluster, args.framework)
    if args.json_output:
        print_json([t.model_dump() for t in templates])
        return 0
    table = Table("id", "cluster", "framework", "strategy", "launcher", "supported")
    for t in templates:
        table.add_row(t.id, t.cluster, t.framework, t.strategy, t.launcher, "yes" if t.supported else f"no: {t.reason}")
    out.print(table)
    return 0


def templates_show(args) -> int:
    """Print one template's source."""
    from .library import get_template, launch_dir

    out.print((launch_dir() / get_template(args.template_id).path).read_text(), markup=False, highlight=False)
    return 0


def templates_search(args) -> int:
    """Search the library by meaning (embedding similarity)."""
    from .retrieve import search

    hits = search(args.query, args.cluster, args.k)
    if args.json_output:
        print_json([{"score": h.score, **h.template.model_dump()} for h in hits])
        return 0
    table = Table("score", "id", "description")
    for h in hits:
        table.add_row(f"{h.score:.3f}", h.template.id, h.template.description)
    out.print(table)
    return 0


def register(commands, command, at_least) -> None:
    """The `templates` command and its subcommands, each made by the cli's `command` helper."""
    templates = commands.add_parser("templates", help="Browse the launch-template library.",
                                    description="Browse the launch-template library.")
    templates.set_defaults(usage=templates)
    subcommands = templates.add_subparsers(title="commands", metavar="COMMAND")
    parser = command(subcommands, "list", templates_list, "List templates.", "Print as JSON.")
    parser.add_argument("--cluster", help="Only this cluster.")
    parser.add_argument("--framework", help="Only this framework.")
    parser = command(subcommands, "show", templates_show, "Print one template.")
    parser.add_argument("template_id", metavar="TEMPLATE_ID", help="A template id from `maple templates list`.")
    parser = command(subcommands, "search", templates_search, "Search templates by meaning.", "Print as JSON.")
    parser.add_argument("query", metavar="QUERY", help="What you are looking for, in words.")
    parser.add_argument("--cluster", help="Only this cluster.")
    parser.add_argument("-k", type=at_least(1), default=5, help="How many results (default: 5).")
