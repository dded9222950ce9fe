"""How a launcher (or any program that runs a command) reads its options: which spellings mean
the same option, which take a value (or two), and where the command it runs begins. The grammars
themselves are data (grammars.yaml); this is the one reader of them."""

import re
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Spec:
    """How a program reads its options: aliases map a spelling to one name; names in `flags`
    take no value, names in `pairs` take two; the rest take one if `value_default`."""

    aliases: dict
    flags: frozenset = frozenset()
    values: frozenset = frozenset()
    pairs: frozenset = frozenset()
    value_default: bool = True
    env_name_value: bool = False  # MPICH's `-env NAME VALUE` (two words) besides `--env NAME=VALUE`
    # A launcher's `$EXTRA_ARGS` (unknown here) holds options: the command comes after it. Not so
    # where an operand comes first (a container's image, a runner's command).
    unknown_words_are_options: bool = True
    # The launcher is one of the program's subcommands (`flux run`, `flux submit`); any other
    # subcommand (`flux hostlist`) starts no ranks.
    subcommands: frozenset = frozenset()
    # argparse's rule (torchrun, deepspeed, accelerate): a word that looks like an option is the next
    # option, never a value, as after an empty `--nnodes $NNODES`. Only the trace's stand-ins read so.
    options_are_never_values: bool = False

    def takes_value(self, name: str) -> bool:
        if name in self.flags:
            return False
        return self.value_default or name in self.values


def _after_subcommand(argv: list[str], spec: Spec) -> Optional[list[str]]:
    """The words after the launcher's subcommand (`flux run -N2 ...`); None after another one (`flux hostlist`)."""
    if not spec.subcommands:
        return argv
    return argv[1:] if argv and argv[0] in spec.subcommands else None


_LOOKS_LIKE_OPTION = re.compile(r"-(?!\d)\S")  # argparse: -4 is a negative number, -x and --x are options
_UNKNOWN_WORD = re.compile(r"\$\{?\w+(?:\[[@*]\])?\}?")  # `$SRUN_ARGS`, `${EXTRA[@]}`


def _option_name(token: str, spec: Spec) -> tuple[str, str, str]:
    """(name, "=" or "", attached value) of one option word."""
    body, eq, value = token.lstrip("-").partition("=")
    if token.startswith("--"):
        return spec.aliases.get(body, body.replace("-", "_")), eq, value
    if body in spec.aliases:  # single-dash long options: -np, -ppn, -genv
        return spec.aliases[body], eq, value
    if len(token) > 2 and token[1] in spec.aliases:  # attached short value: -N2, -lselect=2
        return spec.aliases[token[1]], "=", token[2:]
    return spec.aliases.get(body, body.replace("-", "_")), eq, value


def option_name(token: str, spec: Spec) -> Optional[str]:
    """The one name of an option spelled `token` (`-np`, `--nproc-per-node`), or None when the
    spelling carries a value of its own (`-N2`, `--ntasks=4`) or is no option."""
    name, eq, value = _option_name(token, spec)
    return name if token.startswith("-") and not eq and not value else None


def _option_values(name: str, argv: list[str], i: int, spec: Spec) -> tuple[list[str], int]:
    """The values of option `name` whose words start at argv[i], and the index after them."""
    if name in spec.pairs and i + 1 < len(argv):
        return argv[i:i + 2], i + 2
    if not (spec.takes_value(name) and i < len(argv)) or name.startswith("no_"):  # --no-x never takes one
        return [""], i
    if spec.options_are_never_values and _LOOKS_LIKE_OPTION.match(argv[i]):
        return [""], i
    # MPICH's `-env NAME VALUE` versus PALS's `--env NAME=VALUE`
    if spec.env_name_value and name == "env" and "=" not in argv[i] and i + 1 < len(argv):
        return [f"{argv[i]}={argv[i + 1]}"], i + 2
    return [argv[i]], i + 1


def parse_options(argv: list[str], spec: Spec) -> tuple[dict[str, list], list[str]]:
    """Options up to the first operand, as {name: [values]}; the operand and what follows. A program
    whose launcher is one of its subcommands gives no command when another subcommand is run."""
    argv = _after_subcommand(argv, spec)
    if argv is None:
        return {}, []
    opts: dict[str, list] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            return opts, argv[i + 1:]
        if _UNKNOWN_WORD.fullmatch(token) and spec.unknown_words_are_options and i + 1 < len(argv):
            i += 1  # `srun $SRUN_ARGS -u ...`: options only the job knows; the command comes after
            continue
        if not token.startswith("-") or token == "-":
            break
        name, eq, value = _option_name(token, spec)
        values, i = ([value], i + 1) if eq else _option_values(name, argv, i + 1, spec)
        opts.setdefault(name, []).extend(values)
    return opts, argv[i:]


def last(opts: dict, name: str) -> Optional[str]:
    values = opts.get(name)
    return values[-1] if values else None


def count_ranks(alternatives, value) -> Optional[int]:
    """The first alternative (a list of option names) whose options all have a known value
    (`value(name)`), multiplied; None when none has. Shared with `maple trace`'s stand-in, which
    imports this module alone."""
    for names in alternatives:
        values = [value(name) for name in names]
        if all(v is not None for v in values):
            product = 1
            for v in values:
                product *= v
            return product
    return None


def gres_gpus(value: str) -> Optional[int]:
    """GPUs per node in a Slurm --gres=gpu[:type][:count][,other...] (a plain `gpu` is one): sbatch's
    directive and srun's option, read by the Slurm unit and the trace's srun stand-in alike."""
    for item in value.split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] == "gpu":
            return int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
    return None


# The CPython interpreter's own options (https://docs.python.org/3/using/cmdline.html and python(1),
# read 2026-11-29): short options combine (`-uB`) and take their value attached or as the next word
# (`-Wignore`, `-W ignore`); -c CMD, -m MOD and `-` end the options, and so does the first other word
# (the script). -Q is Python 2's division option, still in old scripts.
PYTHON_SHORT_VALUES = frozenset("WXQ")
PYTHON_INTERFACE = frozenset("cm")
PYTHON_SHORT_FLAGS = frozenset("bBdEhiIOPqRsSuvVx?")
PYTHON_LONG_VALUES = frozenset({"--check-hash-based-pycs"})
PYTHON_LONG_FLAGS = frozenset({"--help", "--help-env", "--help-xoptions", "--help-all", "--version"})
# How a port's header names the interpreter options it does not carry (the trace's gate reads it)
PYTHON_OPTIONS_NOTE = "python's own options"


def python_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """The words after `python`, split into the interpreter's options and what it runs: a script
    and its arguments, ["-m", MODULE, ...], ["-c", CODE, ...] or ["-", ...]; the second part is []
    when the line ends in options (or an option python does not have, which it would refuse)."""
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        word = argv[i]
        if word == "--":
            return argv[:i + 1], argv[i + 1:]
        if word.startswith("--"):
            name = word.split("=", 1)[0]
            if name not in PYTHON_LONG_VALUES | PYTHON_LONG_FLAGS:
                return argv[:i], []
            i += 2 if name in PYTHON_LONG_VALUES and "=" not in word else 1
            continue
        for k, letter in enumerate(word[1:], start=1):
            attached = word[k + 1:]
            if letter in PYTHON_INTERFACE:
                options = argv[:i] + ([word[:k]] if k > 1 else [])
                return options, [f"-{letter}", *([attached] if attached else []), *argv[i + 1:]]
            if letter in PYTHON_SHORT_VALUES:
                i += 1 if attached else 2
                break
            if letter not in PYTHON_SHORT_FLAGS:
                return argv[:i], []
        else:
            i += 1
    return argv[:i], argv[i:]


def python_option_items(options: list[str]) -> list[tuple[str, str]]:
    """python_command's option words as (option, value) pairs: `-uW ignore` is ("-u", ""), ("-W", "ignore")."""
    items, i = [], 0
    while i < len(options):
        word = options[i]
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            if name in PYTHON_LONG_VALUES and not eq:
                value, i = (options[i + 1] if i + 1 < len(options) else ""), i + 1
            items += [(name, value)] if name != "--" else []
        for k, letter in enumerate(word[1:] if not word.startswith("--") else "", start=1):
            if letter in PYTHON_SHORT_VALUES:
                value = word[k + 1:]
                if not value:
                    value, i = (options[i + 1] if i + 1 < len(options) else ""), i + 1
                items.append((f"-{letter}", value))
                break
            items.append((f"-{letter}", ""))
        i += 1
    return items


# The variable python reads in place of an option (the same page, "Environment variables"): a port
# carries the option as it, so that every rank's python still reads it whatever starts the rank.
# -E, -I, -S, -q, -b, -x, -R and --check-hash-based-pycs have none.
_FLAG_VARIABLES = {"-u": "PYTHONUNBUFFERED", "-B": "PYTHONDONTWRITEBYTECODE", "-s": "PYTHONNOUSERSITE",
                   "-P": "PYTHONSAFEPATH", "-i": "PYTHONINSPECT"}
_COUNTED_VARIABLES = {"-O": "PYTHONOPTIMIZE", "-v": "PYTHONVERBOSE", "-d": "PYTHONDEBUG"}  # -OO is 2
_X_VARIABLES = {"dev": "PYTHONDEVMODE", "faulthandler": "PYTHONFAULTHANDLER", "importtime": "PYTHONPROFILEIMPORTTIME",
                "utf8": "PYTHONUTF8", "tracemalloc": "PYTHONTRACEMALLOC", "pycache_prefix": "PYTHONPYCACHEPREFIX",
                "warn_default_encoding": "PYTHONWARNDEFAULTENCODING", "int_max_str_digits": "PYTHONINTMAXSTRDIGITS",
                "cpu_count": "PYTHON_CPU_COUNT"}


def python_option_env(options: list[str]) -> tuple[dict, list[str]]:
    """(the variables that say what python's options say, the options no variable says). Under -E
    or -I python reads no PYTHON* variable: then none is carried."""
    items = python_option_items(options)
    if {name for name, _ in items} & {"-E", "-I"}:
        return {}, [f"{name} {value}".strip() for name, value in items]
    env, kept_out, warnings = {}, [], []
    for name, value in items:
        x_name, _, x_value = value.partition("=")
        if name in _FLAG_VARIABLES:
            env[_FLAG_VARIABLES[name]] = "1"
        elif name in _COUNTED_VARIABLES:
            env[_COUNTED_VARIABLES[name]] = str(int(env.get(_COUNTED_VARIABLES[name], "0")) + 1)
        elif name == "-W" and value:
            warnings.append(value)
        elif name == "-X" and x_name in _X_VARIABLES:
            env[_X_VARIABLES[x_name]] = x_value or "1"
        else:
            kept_out.append(f"{name} {value}".strip())
    if warnings:
        env["PYTHONWARNINGS"] = ",".join(warnings)
    return env, kept_out
