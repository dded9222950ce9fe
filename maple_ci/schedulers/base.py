"""What every scheduler unit is: how its directives are read (one reader for extraction, static
checks, verification, debug edits and the center gate) and written (writing.py), and the vocabulary
they share (Option, Directives). A unit (slurm.py, pbs.py, ...) sets its tables and overrides what differs."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Optional, Union

from ..errors import MapleError
from ..launchers import Spec
from .writing import DirectiveWriting


def _leading_int(value: str) -> Optional[int]:
    match = re.match(r"\d+", value)
    return int(match[0]) if match else None


def seconds_to_walltime(seconds: int) -> str:
    if seconds >= 10000 * 3600:
        raise ValueError("is over 9999 hours; no queue allows that")
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def clock_seconds(walltime: str) -> int:
    """HH:MM:SS (as the units' walltime() give it) in seconds."""
    hours, minutes, seconds = (int(part) for part in walltime.split(":"))
    return hours * 3600 + minutes * 60 + seconds


def count(value: Optional[str]) -> Optional[int]:
    """A positive count from a resolved value: '4' or a typed GPU spec 'a100:4'."""
    if value is None:
        return None
    match = re.fullmatch(r"(?:[\w.-]+:)?(\d+)", value.strip())
    return int(match.group(1)) if match and int(match.group(1)) > 0 else None


def per_node(total: Optional[int], nodes: Optional[int]) -> Optional[int]:
    return total // nodes if total and nodes and total % nodes == 0 else None


def positive(value: str, d: "Directives") -> int:
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"expects a positive number, got {value!r}")
    return int(value)


def gpu_count(value: str, d: "Directives") -> int:
    number = count(value)
    if number is None:
        raise ValueError(f"expects a GPU count like 4 or a100:4, got {value!r}")
    return number


def as_written(value: str, d: "Directives") -> str:
    return value


# What documentation writes where a user's own value goes: <project_name>, YOUR_ACCOUNT, $PBS_ACCOUNT,
# mXXXX, [account]. A port never carries one: the target's header asks for the real value instead.
PLACEHOLDER = re.compile(r"(?i).*[<>\[\]{}$].*|.*x{3,}.*|your[_-]?\w*|(?:project|account|allocation|"
                         r"queue|partition)(?:[_-]?(?:name|id|code))?|changeme|todo|tbd|none|\.\.\.|.*some(?:user|one|group|prof).*")


def real(value: Optional[str], what: str, d: "Directives") -> Optional[str]:
    """`value`, or None with a note when it is a documentation placeholder or empty (`--account=`,
    `--account= <account>`): a job that names none runs under the scheduler's default, as one without it."""
    if value == "":
        d.notes.append(f"the source's {what} is given with no value; read as none given")
        return None
    if value is None or not PLACEHOLDER.fullmatch(value):
        return value
    d.notes.append(f"the source's {what} {value!r} is a placeholder; give the real one with --{what}")
    return None


@dataclass(frozen=True)
class Option:
    """One option of a directive line: its canonical name, value (None for a flag), the 1-based
    script line, and the words as written there."""

    name: str
    value: Optional[str]
    line: int
    words: tuple


@dataclass
class Directives:
    """What a job asks the scheduler for, read from its directives."""

    scheduler: str = "none"
    nodes: Optional[int] = None
    nodes_given: bool = False  # a range like 2-4 is given but not a fixed count
    spreads: bool = False  # ranks or GPUs in all without a node count: the job may span several nodes
    gpus: Optional[int] = None  # GPUs for the whole job (Slurm --gpus, PBS -l ngpus)
    cpus: Optional[int] = None  # CPUs for the whole job (PBS -l ncpus, as NCI Gadi asks for nodes)
    gpus_per_node: Optional[int] = None
    gpus_per_task: Optional[int] = None
    ntasks: Optional[int] = None
    ntasks_per_node: Optional[int] = None
    cpus_per_task: Optional[int] = None
    walltime: Optional[str] = None
    account: Optional[str] = None
    queue: Optional[str] = None
    constraint: Optional[str] = None  # -C as written (gpu&hbm80g): the source's own cluster keeps it
    image: Optional[str] = None  # Shifter's `#SBATCH --image=docker:...`, used by `srun shifter python ...`
    dropped: list = field(default_factory=list)  # directives a port does not translate, as written
    notes: list = field(default_factory=list)
    lines: dict = field(default_factory=dict)  # field -> the script line it was read from
    errors: list = field(default_factory=list)  # DirectiveError of values that cannot be read

    def tasks(self) -> Optional[int]:
        if self.ntasks:
            return self.ntasks
        return self.ntasks_per_node * self.nodes if self.ntasks_per_node and self.nodes else None

    def on_nodes_of(self, cpus_per_node: int, gpus_per_node: Optional[int] = None) -> "Directives":
        """These directives on nodes of that shape, as their scheduler reads job-wide totals (Gadi's
        `-l ncpus=96 -l ngpus=8`): the scheduler unit's on_nodes is the one home of that rule."""
        from . import find  # the registry imports this module

        unit = find(self.scheduler)
        return unit.on_nodes(self, cpus_per_node, gpus_per_node) if unit else self

    def set(self, name: str, value, line: int) -> None:
        setattr(self, name, value)
        self.lines[name] = line


class DirectiveError(MapleError):
    def __init__(self, message: str, field: str, line: int):
        super().__init__(message)
        self.field, self.line = field, line


# A converter turns an option's value into a Directives field's value (None: leave the field as is);
# ValueError says why it cannot.
Converter = Callable[[str, Directives], object]
Keep = Callable[[Option], Union[None, Option, list]]


class Scheduler(DirectiveWriting):
    name: ClassVar[str]
    prefix: ClassVar[str]
    spec: ClassVar[Spec]
    submit: ClassVar[tuple] = ()
    cancel: ClassVar[tuple] = ()
    script_suffix: ClassVar[str]
    var_prefix: ClassVar[str]
    job_vars: ClassVar[dict] = {}
    helper_vars: ClassVar[frozenset] = frozenset()
    # The job's own variables a verification job may see (verify/jobenv.py): what the scheduler sets
    # for a batch job, never input variables that make it run a program (SLURM_TASK_PROLOG).
    job_environment: ClassVar[frozenset] = frozenset()
    batch_task: ClassVar[dict] = {}  # per-task variables the batch shell has as its job's first task (`maple trace`)
    fixed_vars: ClassVar[dict] = {}
    site_options: ClassVar[frozenset] = frozenset()
    gate_kept: ClassVar[frozenset] = frozenset()
    size_options: ClassVar[frozenset] = frozenset()  # what capped() writes: the node count and the walltime
    node_features: ClassVar[bool] = False
    launchers: ClassVar[frozenset] = frozenset()  # launchers that run only under this scheduler (srun)
    export_option: ClassVar[Optional[str]] = None  # the submit option that passes variables to the job
    passes_arguments: ClassVar[bool] = False  # words after the script on the submit line reach it as $1...
    runs_command: ClassVar[bool] = False  # a submit line's words that are no script file are the job's command line
    command_option: ClassVar[Optional[str]] = None  # the submit option whose value is the job's shell command
    verify_backend: ClassVar[Optional[str]] = None
    dialect_of: ClassVar[Optional[str]] = None  # the scheduler whose prefix it shares; its block() claims only its own scripts
    # What the debug agent needs (debug/ reads these; it names no scheduler): regexes of the lines the
    # scheduler writes when it refuses or ends a job, how to look up a site value (fact -> command),
    # and what to do when the user's job limit is reached.
    error_patterns: ClassVar[tuple] = ()
    site_queries: ClassVar[dict] = {}
    limit_advice: ClassVar[str] = ""
    # What a job asks for that a port does not translate (output names, arrays, mail, ...): listed as
    # written in Directives.dropped, so the port's header can say so.
    not_ported: ClassVar[frozenset] = frozenset()
    # The options a debug fix may set (debug/policy.py), canonical name -> the form of its value (a
    # key of debug.policy.FORMS): what the allocation asks for, never a program, an environment, a
    # container or a file to write (--task-prolog, --export, --container-image, -o /path).
    fix_options: ClassVar[dict] = {}
    # option name -> (Directives field, converter); see interpret()
    fields: ClassVar[dict] = {}
    example: ClassVar[str] = ""

    def __repr__(self) -> str:
        return f"<scheduler {self.name}>"

    def device_env(self, gpus: Optional[int], per_task: Optional[int]) -> dict:
        """The GPU variables of a batch job holding `gpus` per node (None: it asked for none), as
        `maple trace` emulates them: name -> value, None for one the job does not have."""
        return {}

    # --- reading --------------------------------------------------------------------------------

    def after_prefix(self, stripped: str) -> Optional[str]:
        """The rest of a directive line of this scheduler, or None if the line is not one."""
        rest = stripped[len(self.prefix):]
        if stripped.startswith(self.prefix) and (not rest or rest[0].isspace()):
            return rest
        return None

    def block(self, text: str) -> list[tuple[int, str]]:
        """(line, text after the prefix) of each directive before the first command: sbatch, qsub,
        bsub and flux batch all stop reading directives there."""
        found = []
        for lineno, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                break
            rest = self.after_prefix(stripped)
            if rest is not None:
                found.append((lineno, rest))
        return found

    def options(self, text: str) -> list[Option]:
        found = []
        for lineno, rest in self.block(text):
            try:
                words = shlex.split(rest, comments=True)
            except ValueError as exc:
                raise MapleError(f"line {lineno}: cannot read the {self.prefix} line ({exc})") from exc
            found += self.parse_words(words, lineno)
        return found

    def _name(self, token: str) -> tuple[str, Optional[str]]:
        """(canonical name, attached value or None) of one option word."""
        body, eq, value = token.lstrip("-").partition("=")
        if token.startswith("--"):
            return self.spec.aliases.get(body, body.replace("-", "_")), value if eq else None
        if body in self.spec.aliases:
            return self.spec.aliases[body], value if eq else None
        if len(token) > 2 and token[1] in self.spec.aliases:  # attached short value: -N2, -lselect=2
            return self.spec.aliases[token[1]], token[2:]
        return self.spec.aliases.get(body, body.replace("-", "_")), value if eq else None

    def parse_words(self, words: list[str], line: int) -> list[Option]:
        """The options of one directive line, in order, each with the words it spans."""
        found, i = [], 0
        while i < len(words):
            name, value = self._name(words[i])
            width = 1
            if value is None and words[i].startswith("-") and self.spec.takes_value(name) and i + 1 < len(words) \
                    and not re.match(r"-[A-Za-z-]", words[i + 1]):
                value, width = words[i + 1], 2
            found.append(Option(name if words[i].startswith("-") else "", value if words[i].startswith("-") else words[i],
                                line, tuple(words[i:i + width])))
            i += width
        return found

    def canonical(self, spelling: str) -> str:
        return self._name(spelling.strip())[0]

    def effective(self, options: list[Option]) -> dict[str, Option]:
        """The option that takes effect for each name: a later one overrides an earlier one."""
        return {option.name: option for option in options}

    def interpret(self, options: list[Option], d: Directives) -> None:
        """Fill `d` from the options (table `fields`), then what combines several (finish)."""
        d.dropped += [" ".join(self.format_option(o.name, o.value)) for o in options if o.name in self.not_ported]
        last = self.effective(options)
        for name, option in last.items():
            target = self.fields.get(name)
            if target is None or option.value is None:
                continue
            try:
                value = target[1](option.value, d)
            except ValueError as exc:
                d.errors.append(DirectiveError(f"line {option.line}: {' '.join(self.format_option(name, None))} {exc}",
                                               target[0], option.line))
                continue
            if value is not None:
                d.set(target[0], value, option.line)
        self.finish(last, d)

    def finish(self, last: dict[str, Option], d: Directives) -> None:
        """What several options decide together; nothing by default."""

    def on_nodes(self, d: Directives, cpus_per_node: int, gpus_per_node: Optional[int]) -> Directives:
        """`d` on nodes with these CPUs and GPUs (None: not known): the node count where the directives
        give only job-wide totals. By default the directives give the node count themselves."""
        return d

    def read(self, text: str, strict: bool = True) -> Directives:
        d = Directives(scheduler=self.name)
        self.interpret(self.options(text), d)
        if strict and d.errors:
            raise d.errors[0]
        return d

    def walltime(self, value: str) -> Optional[str]:
        """The scheduler's walltime forms as HH:MM:SS; None when unlimited; ValueError if unreadable."""
        raise NotImplementedError

    def write_walltime(self, walltime: str) -> str:
        """HH:MM:SS as this scheduler's directives write a walltime (Slurm and PBS take it as is)."""
        return walltime

    def node_file(self, nodes: list, slots: int) -> str:
        """The job's node file (job_vars' node_file) as the scheduler writes it: one host a line."""
        return "".join(f"{node}\n" for node in nodes)

    def seconds(self, value: Optional[str], cap: int) -> int:
        """A walltime in seconds, at most `cap` (which an unlimited or unreadable one gets)."""
        try:
            walltime = self.walltime(value) if value else None
        except ValueError:
            walltime = None
        return min(clock_seconds(walltime), cap) if walltime else cap

    def capped_size(self, last: dict[str, Option], nodes: str, time: str, max_nodes: int, max_seconds: int,
                    count: Callable[[str], Optional[int]] = None) -> list[str]:
        """The words of a node-count option and a walltime option from the effective options, capped: the
        shape of every unit's `capped`. `count` reads the node option's value (default: its leading integer)."""
        given, limit = last.get(nodes), last.get(time)
        number = (count or _leading_int)(given.value) if given and given.value else None
        seconds = self.seconds(limit.value if limit else None, max_seconds)
        return [*self.format_option(nodes, str(min(number or 1, max_nodes))),
                *self.format_option(time, seconds_to_walltime(seconds))]

    def display(self, option: Option) -> str:
        """How a message names the option: as its first word is spelled, without a value."""
        first = option.words[0] if option.words else option.name
        return first.split("=")[0] if first.startswith("--") else first[:2]

    def owns_variable(self, name: str) -> bool:
        """Whether `name` is one of this scheduler's job variables (by prefix or listed)."""
        return name.startswith(self.var_prefix) or any(name in listed for listed in self.job_vars.values())

    def known_vars(self, d: Directives) -> dict[str, str]:
        """Job variables whose value the directives fix (fixed_vars: variable -> Directives attribute)."""
        known = {}
        for variable, attribute in self.fixed_vars.items():
            value = d.tasks() if attribute == "tasks" else getattr(d, attribute)
            if value:
                known[variable] = str(value)
        return known
