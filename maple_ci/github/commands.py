"""Parse `/maple ...` comment commands (who may run them: authorization.py).

Pure functions: no network, no environment. A comment is untrusted text, so every value that
leaves this module has been checked against a fixed set or a strict pattern.
"""

from __future__ import annotations

import difflib
import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Iterable, Iterator

from maple_ci.errors import MapleError
from maple_ci.extract import program_line
from maple_ci.github.markdown import code

# The JobIntent vocabulary (DESIGN.md); a flag may only override a field with a value it can hold.
FRAMEWORKS = ("pytorch", "deepspeed", "accelerate", "megatron", "lightning")
STRATEGIES = ("ddp", "fsdp", "zero1", "zero2", "zero3", "3d", "tp", "single")
MAX_NODES = 10000
MAX_GPUS_PER_NODE = 64
MAX_PATH = 1024  # characters of a --from path or an entrypoint; longer is no file anyone meant
MAX_LINE = 16384  # characters of a `/maple` line: every option at its longest (MAX_PATH) fits

# Names the scheduler takes (accounts, queues): a word, never a shell or Markdown metacharacter.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
_ENTRYPOINT = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./+-]*|-m [A-Za-z_][A-Za-z0-9_.]*")
# A program argument: literal text that means the same unquoted in any shell (no $, quotes, globs).
_ARGUMENT = re.compile(r"[A-Za-z0-9_./:=,+@%-]+")
_WALLTIME = re.compile(r"[0-9]{1,4}:[0-5][0-9]:[0-5][0-9]")
SHA = re.compile(r"[0-9a-f]{40}")
_PIN = re.compile(r"@([0-9a-f]{12,40})")  # 7 hex digits are 28 bits: a fork can make a commit that shares them
# Flags that take a value; the JobIntent overrides are the port options named like its fields.
_VALUE_FLAGS = ("--from", "--framework", "--strategy", "--nodes", "--entrypoint", "--program-args", "--gpus-per-node",
                "--account", "--queue", "--walltime")
_OPTIONS = ("framework", "strategy", "nodes", "entrypoint", "program_args", "gpus_per_node", "account", "queue",
            "walltime")  # the BotCommand fields a `--flag value` sets, in the order text() writes them


@dataclass(frozen=True)
class BotCommand:
    """What a comment asked for. `clusters` empty on `verify` means every ported cluster."""

    name: str  # "port" | "verify" | "approve" | "help" | "ignore" | "unignore"
    clusters: tuple[str, ...] = ()
    source: str | None = None  # --from: the launch script to port, relative to the repo root
    framework: str | None = None
    strategy: str | None = None
    nodes: int | None = None
    verify: bool = True
    entrypoint: str | None = None  # a command line, as `maple port --entrypoint`: 'train.py --config x'
    program_args: str | None = None  # the program's arguments, replacing the script's: '--config x'
    gpus_per_node: int | None = None
    account: str | None = None
    queue: str | None = None
    walltime: str | None = None
    sha: str | None = None  # port: `@<sha>`, the PR head the maintainer saw; approve: the commit approved
    recreate: bool = False  # `/maple recreate`: a port that discards others' commits on the bot's branch
    files: tuple[str, ...] = ()  # ignore/unignore: launch scripts (clusters go in `clusters`)

    def text(self) -> str:
        """The command as a comment line that asks for it again (for a refusal's ready-to-copy retry)."""
        if self.recreate:
            return " ".join(["/maple recreate", *self.clusters])
        words = ["/maple", self.name, *self.clusters, *self.files] + self._option_words() + self._mark_words()
        return " ".join(words)

    def _option_words(self) -> list[str]:
        """`--from PATH` and each `--flag value` set, values quoted for a shell."""
        words = ["--from", self.source] if self.source else []
        return words + [f"--{name.replace('_', '-')} {shlex.quote(str(getattr(self, name)))}" for name in _OPTIONS
                        if getattr(self, name) is not None]

    def _mark_words(self) -> list[str]:
        """`--no-verify` and the pinned `@sha`, when given."""
        return ([] if self.verify else ["--no-verify"]) + ([f"@{self.sha}"] if self.sha else [])

    def overrides(self) -> dict:
        """The JobIntent fields this command sets, for port.apply_overrides (as the CLI's options)."""
        entrypoint, script_args = program_line(self.entrypoint, self.program_args)
        return {"framework": self.framework, "strategy": self.strategy, "nodes": self.nodes,
                "entrypoint": entrypoint, "script_args": script_args, "gpus_per_node": self.gpus_per_node,
                "account": self.account, "queue": self.queue, "walltime": self.walltime}


COMMANDS = ("port", "verify", "recreate", "ignore", "unignore", "approve", "help")
FLAGS = (*_VALUE_FLAGS, "--no-verify")


class CommandError(MapleError):
    """A `/maple` line that cannot be run; the message is the whole reply: the problem and where
    the full usage is (a typo deserves one line back, not the whole manual)."""

    def __init__(self, problem: str, known_clusters: Iterable[str]):
        super().__init__(f"{problem}\n\n`/maple help` lists every command, option and cluster.", exit_code=2)
        self.problem = problem


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`: did you mean `x`?` for the closest choice (difflib), else `. Known: ...` (ends the sentence)."""
    choices = tuple(choices)
    close = difflib.get_close_matches(word.lower(), choices, n=1, cutoff=0.6)
    return f": did you mean {code(close[0])}?" if close else f". Known: {', '.join(sorted(choices))}."


def help_text(known_clusters: Iterable[str]) -> str:
    # A fenced block: the parser skips fences, so the bot never obeys its own help reply.
    return (
        "Usage:\n"
        "```\n"
        "/maple port <cluster>... [--from PATH] [--framework F] [--strategy S] [--nodes N]\n"
        "            [--entrypoint 'PROGRAM [ARGS]'] [--program-args 'ARGS'] [--gpus-per-node G]\n"
        "            [--account A] [--queue Q] [--walltime HH:MM:SS] [--no-verify] [@SHA]\n"
        "/maple verify [cluster...]\n"
        "/maple recreate [cluster...]       (discard others' commits on the bot's branch, port again)\n"
        "/maple ignore <cluster|file>...    (stop porting them in this PR; unignore undoes, no argument: all)\n"
        "/maple unignore [cluster|file...]\n"
        "/maple approve <40-hex SHA of a fork's commit>\n"
        "/maple help\n"
        "```\n"
        f"Clusters: {', '.join(sorted(known_clusters))}\n"
        f"Frameworks: {', '.join(FRAMEWORKS)}\n"
        f"Strategies: {', '.join(STRATEGIES)}"
    )


def command_line(body: str) -> str | None:
    """The first line outside code fences that starts with `/maple` (a word of its own)."""
    in_fence = False
    for raw in body.splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if not in_fence and _is_command(line):
            return line
    return None


def _is_command(line: str) -> bool:
    return line == "/maple" or line.startswith(("/maple ", "/maple\t"))


def parse_comment(body: str, known_clusters: Iterable[str]) -> BotCommand | None:
    """The command in a comment body; None when the comment has no `/maple` line.

    Raises CommandError for a `/maple` line that is not a valid command."""
    line = command_line(body)
    if line is None:
        return None
    known = tuple(known_clusters)
    words = _words(line, known)[1:]
    if not words:
        raise CommandError("`/maple` needs a command.", known)
    name = words[0].lower()
    parse = _PARSERS.get(name)
    if parse is None:
        raise CommandError(f"Unknown command {code(words[0])}{did_you_mean(name, COMMANDS)}"
                           + _cluster_typos(words[1:], known), known)
    return parse(name, words[1:], known)


def _cluster_typos(args: list[str], known: tuple[str, ...]) -> str:
    """Each word that looks like a misspelt cluster, with the nearest one: one reply fixes the whole line."""
    typos = [w for w in args if not w.startswith(("-", "@")) and w.lower() not in known
             and difflib.get_close_matches(w.lower(), known, n=1, cutoff=0.6)]
    return "".join(f" Unknown cluster {code(w)}{did_you_mean(w.lower(), known)}" for w in typos)


def _help(name: str, args: list[str], known: tuple[str, ...]) -> BotCommand:
    if args:
        raise CommandError("`/maple help` takes no arguments.", known)
    return BotCommand("help")


def _approve(name: str, args: list[str], known: tuple[str, ...]) -> BotCommand:
    if len(args) != 1 or not SHA.fullmatch(args[0]):
        raise CommandError("`/maple approve` takes the full 40-character SHA of the commit to approve.", known)
    return BotCommand("approve", sha=args[0])


def _recreate(name: str, args: list[str], known: tuple[str, ...]) -> BotCommand:
    return BotCommand("port", _clusters_only(name, args, known), recreate=True)


def _verify(name: str, args: list[str], known: tuple[str, ...]) -> BotCommand:
    return BotCommand("verify", _clusters_only(name, args, known))


def _clusters_only(name: str, args: list[str], known: tuple[str, ...]) -> tuple[str, ...]:
    """The clusters of a command that takes nothing else."""
    clusters, options = _split_args(args, known)
    if options:
        raise CommandError(f"`/maple {name}` takes only cluster names, not {code(next(iter(options)))}.", known)
    return clusters


def _port(name: str, args: list[str], known: tuple[str, ...]) -> BotCommand:
    clusters, options = _split_args(args, known)
    if not clusters:
        raise CommandError("`/maple port` needs at least one target cluster.", known)
    return BotCommand(
        "port",
        clusters,
        source=_repo_path(options["--from"], known) if "--from" in options else None,
        framework=_choice(options, "--framework", FRAMEWORKS, known),
        strategy=_choice(options, "--strategy", STRATEGIES, known),
        nodes=_number(options, "--nodes", MAX_NODES, known),
        verify="--no-verify" not in options,
        entrypoint=_program(options, "--entrypoint", known),
        program_args=_program(options, "--program-args", known),
        gpus_per_node=_number(options, "--gpus-per-node", MAX_GPUS_PER_NODE, known),
        account=_matching(options, "--account", _NAME, "a name (letters, digits, `_.-`, at most 64)", known),
        queue=_matching(options, "--queue", _NAME, "a name (letters, digits, `_.-`, at most 64)", known),
        walltime=_matching(options, "--walltime", _WALLTIME, "HH:MM:SS", known),
        sha=options.get("@"),
    )


def _words(line: str, known: tuple[str, ...]) -> list[str]:
    """The line's words, split at blanks outside quotes ('...' or "..."), so that a value holds a
    command line. Quotes only: a backslash is kept (and refused where a value cannot hold one)."""
    if len(line) > MAX_LINE:
        raise CommandError(f"A `/maple` line is at most {MAX_LINE} characters.", known)
    lexer = shlex.shlex(line, posix=True)
    lexer.whitespace_split, lexer.commenters, lexer.escape = True, "", ""
    try:
        return list(lexer)
    except ValueError:
        raise CommandError("A quote is not closed: quote a command line as one value, "
                           "`--entrypoint 'train.py --config x'`.", known) from None


def _ignore(name: str, args: list[str], known: tuple[str, ...]) -> BotCommand:
    """`/maple ignore <cluster|file>...` (at least one) and `/maple unignore [cluster|file...]`."""
    if name == "ignore" and not args:
        raise CommandError("`/maple ignore` needs a cluster or a launch script, e.g. `/maple ignore aurora`.", known)
    clusters = tuple(dict.fromkeys(a.lower() for a in args if a.lower() in known))
    return BotCommand(name, clusters, files=_named_files(args, known))


def _named_files(args: list[str], known: tuple[str, ...]) -> tuple[str, ...]:
    """The arguments that are not cluster names, as paths inside the checkout (deduplicated, in order)."""
    return tuple(dict.fromkeys(_repo_path(a, known) for a in args if a.lower() not in known))


# Each command's parser: (name, arguments, known clusters) -> BotCommand.
_PARSERS = {"help": _help, "approve": _approve, "ignore": _ignore, "unignore": _ignore, "recreate": _recreate,
            "verify": _verify, "port": _port}


def _split_args(args: list[str], known: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, str]]:
    """Cluster names (deduplicated, in order) and `--flag value` / `--flag=value` options."""
    clusters: list[str] = []
    options: dict[str, str] = {}
    words = iter(args)
    for word in words:
        if word.startswith("@"):
            _add_pin(word, options, known)
        elif not word.startswith("--"):
            _add_cluster(word, clusters, known)
        else:
            _add_option(word, words, options, known)
    return tuple(clusters), options


def _add_pin(word: str, options: dict[str, str], known: tuple[str, ...]) -> None:
    pin = _PIN.fullmatch(word)
    if not pin or "@" in options:
        raise CommandError(f"{code(word)}: give one `@SHA` (12 to 40 lowercase hex digits) of the PR head.", known)
    options["@"] = pin[1]


def _add_cluster(word: str, clusters: list[str], known: tuple[str, ...]) -> None:
    cluster = word.lower()
    if cluster not in known:
        raise CommandError(f"Unknown cluster {code(word)}{did_you_mean(cluster, known)}", known)
    if cluster not in clusters:
        clusters.append(cluster)


def _add_option(word: str, words: Iterator[str], options: dict[str, str], known: tuple[str, ...]) -> None:
    """`--no-verify`, or a `--flag value` / `--flag=value` (the value the next word when no `=`)."""
    flag, eq, value = word.partition("=")
    if flag == "--no-verify" and not eq:
        options[flag] = ""
        return
    if flag not in _VALUE_FLAGS:
        raise CommandError(f"Unknown option {code(word)}{did_you_mean(flag, FLAGS)}", known)
    value = _option_value(flag, value if eq else next(words, ""), known)
    if flag in options:
        raise CommandError(f"`{flag}` is given twice.", known)
    options[flag] = value


def _option_value(flag: str, value: str, known: tuple[str, ...]) -> str:
    # a flag where the value should be means the value is missing (`--program-args '--lr 3'` is a value)
    if not value or value.partition("=")[0] in FLAGS:
        raise CommandError(f"`{flag}` needs a value.", known)
    return value


def _repo_path(value: str, known: tuple[str, ...]) -> str:
    """A path that can only name a file inside the checkout: it is later opened by the runner."""
    path = PurePosixPath(value)
    if _unsafe_text(value) or _leaves_checkout(path):
        raise CommandError(f"`--from` {code(value[:200])} must be a relative path inside the repository "
                           f"(at most {MAX_PATH} characters).", known)
    return str(path)


def _unsafe_text(value: str) -> bool:
    """Too long, a backslash, a control character (NUL...), or an absolute or home path."""
    return len(value) > MAX_PATH or "\\" in value or _has_control(value) or value.startswith(("/", "~"))


def _has_control(value: str) -> bool:
    return any(ord(c) < 32 for c in value)


def _leaves_checkout(path: PurePosixPath) -> bool:
    """A `..` or `.git` part, or the checkout itself."""
    return any(part in ("..", ".git") for part in path.parts) or str(path) == "."


def _choice(options: dict[str, str], flag: str, allowed: tuple[str, ...], known: tuple[str, ...]) -> str | None:
    if flag not in options:
        return None
    value = options[flag].lower()
    if value not in allowed:
        raise CommandError(f"`{flag}` must be one of {', '.join(allowed)}; got {code(options[flag])}.", known)
    return value


def _number(options: dict[str, str], flag: str, most: int, known: tuple[str, ...]) -> int | None:
    if flag not in options:
        return None
    value = options[flag]
    # [0-9] and not str.isdigit(): isdigit() accepts superscripts and other scripts' digits.
    if not re.fullmatch(r"[0-9]{1,5}", value) or not 1 <= int(value) <= most:
        raise CommandError(f"`{flag}` must be a whole number from 1 to {most}; got {code(value[:20])}.", known)
    return int(value)


def _matching(options: dict[str, str], flag: str, pattern: re.Pattern, what: str, known: tuple[str, ...]) -> str | None:
    """The flag's value when the whole of it matches `pattern` (fullmatch: no trailing newline)."""
    if flag not in options:
        return None
    value = options[flag]
    if len(value) > MAX_PATH or not pattern.fullmatch(value) or ".." in value.split("/"):
        raise CommandError(f"`{flag}` must be {what}; got {code(value[:200])}.", known)
    return value


def _program(options: dict[str, str], flag: str, known: tuple[str, ...]) -> str | None:
    """`--entrypoint 'train.py --config x'` or `--program-args '--config x'` as given, when every word
    is literal text and the program a path inside the checkout (or `-m module`)."""
    if flag not in options:
        return None
    value = options[flag]
    if not _literal_program(flag, value):
        what, example = _PROGRAM_FORMS[flag]
        raise CommandError(f"`{flag}` must be {what}: words of letters, digits and `_./:=,+@%-`, quoted as one "
                           f"value (`{flag} {example}`); got {code(value[:200])}.", known)
    return value


# What each program flag holds, and an example, for its refusal.
_PROGRAM_FORMS = {"--entrypoint": ("a program and its arguments", "'train.py --config x'"),
                  "--program-args": ("the program's arguments", "'--config x --lr 3e-4'")}


def _literal_program(flag: str, value: str) -> bool:
    """Every word literal text, and an entrypoint's program a path inside the checkout (or `-m module`)."""
    if not _literal_words(value):
        return False
    return flag != "--entrypoint" or _entrypoint_program(value)


def _literal_words(value: str) -> bool:
    words = value.split()
    return len(value) <= MAX_PATH and bool(words) and all(_ARGUMENT.fullmatch(word) for word in words)


def _entrypoint_program(value: str) -> bool:
    try:
        program = program_line(value, None)[0]  # as `maple port` reads it: `python` in front dropped
    except MapleError:  # `python` alone
        program = ""
    return bool(_ENTRYPOINT.fullmatch(program)) and ".." not in program.split("/")
