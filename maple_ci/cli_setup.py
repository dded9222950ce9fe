"""`maple init` and `maple config check`: setting up the bot in a repository (init_config.py)."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape

from .cli_output import err, out

NEXT_STEPS = """Next steps (maple-ci's docs/bot.md):
  1. Review {config}: `targets`, `sources`, `verification`.
  2. Pin maple-ci in the three workflows: replace `@v0` with the full SHA of the release you reviewed.
  3. Choose the token: a GitHub App (vars.MAPLE_APP_CLIENT_ID, secrets.MAPLE_APP_PRIVATE_KEY; your CI then runs
     on maple-ci's PRs), or the workflow's token with Settings > Actions > General >
     "Allow GitHub Actions to create and approve pull requests" ticked.
  4. Create the environment `maple` (Settings > Environments), deployment branches: the default branch only.
  5. Commit and push; `maple config check` checks the file at any time."""


def init_command(args) -> int:
    """Write .github/maple.yml and maple-ci's workflows, from the launch scripts found here."""
    from .init_config import init
    from .profiles import load_profiles

    proposal, written = init(args.root, load_profiles(), force=args.force)
    for script, cluster in proposal.scripts.items():
        out.print(f"found {escape(script)}" + (f" (written for {cluster})" if cluster else ""), highlight=False)
    if not proposal.scripts:
        err.print("[yellow]no launch script found:[/] list yours under `sources` in .github/maple.yml")
    out.print(f"targets: {', '.join(proposal.targets)}", highlight=False)
    for path in written:
        out.print(f"wrote {escape(str(args.root / path))}", highlight=False)
    out.print(NEXT_STEPS.format(config=escape(str(args.root / written[0]))), highlight=False)
    return 0


def config_check(args) -> int:
    """Check .github/maple.yml as the bot reads it; exit 2 and each problem when it is not right."""
    from .init_config import check
    from .profiles import load_profiles

    problems = check(args.root / args.path, args.root, load_profiles())
    for problem in problems:
        err.print(f"[red]error:[/] {escape(problem)}", highlight=False)
    if not problems:
        out.print(f"{escape(str(args.root / args.path))}: ok", highlight=False)
    return 2 if problems else 0


def register(commands, command) -> None:
    """The two commands on the `maple` parser; `command` is cli._command."""
    from .github import DEFAULT_PATH

    parser = command(commands, "init", init_command, "Set maple-ci's bot up in a repository.")
    parser.add_argument("root", nargs="?", type=Path, default=Path("."), metavar="DIR", help="The repository (default: here).")
    parser.add_argument("--force", action="store_true", help="Replace existing files.")
    group = commands.add_parser("config", help="Check the bot's configuration.", description="Check the bot's configuration.")
    group.set_defaults(usage=group)
    parser = command(group.add_subparsers(title="commands", metavar="COMMAND"), "check", config_check,
                     "Check .github/maple.yml as the bot reads it.")
    parser.add_argument("path", nargs="?", default=DEFAULT_PATH, metavar="FILE", help=f"Relative to --root (default: {DEFAULT_PATH}).")
    parser.add_argument("--root", type=Path, default=Path("."), metavar="DIR", help="The repository (default: here).")
