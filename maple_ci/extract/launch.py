"""The launch chain: a command followed through launchers and wrappers to the program it runs.

`srun --mpi=pmix -l apptainer exec --nv img.sif ./set_affinity.sh python -u train.py --lr 3e-4`
is read stage by stage: the MPI launcher and its options, the container (kept as JobIntent.container),
the per-rank wrapper (a known site affinity wrapper is dropped, the target binds ranks itself; any
other is kept as JobIntent.wrapper), then python and the program. A wrapper script or a `bash -c`
string is read as a script of its own (`launch.inner`), so `srun bash -c "$CMD"` and `srun
./train.sh` lead to the torchrun inside them. The words arrive already expanded (`walk`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from ..errors import MapleError
from ..launchers import DL_LAUNCHERS, MPI_LAUNCHERS, launcher
from ..launchers.options import PYTHON_OPTIONS_NOTE, python_command, python_option_env
from ..values import env_rule
from .options import (ACCELERATE, DEEPSPEED, PASSTHROUGH, PROFILER, RUNNER, TIME, TIMEOUT, TORCHRUN, Spec, last,
                      parse_options)
from .budget import SYNTAX_CHECK_STEPS
from .candidates import from_arguments
from .containers import CONTAINERS, container, named_runtime, pyxis
from .consoles import CONSOLES, REMOTE, console, on_path, remote, site_wrapper
from .frameworks import console_program
from .named import RUNNERS, named_command
from .program import best, score
from .submit import in_checkout, is_submit
from .shell import bash_syntax_error

if TYPE_CHECKING:
    from .walk import Shell

_PLAIN_WRAPPERS = {"nohup", "exec", "command", "builtin", "unbuffer"}
_BINDING = {"numactl", "taskset", "stdbuf", "nice", "env", "hwloc-bind"}  # options, then the command
_PYTHON = re.compile(r"python[\d.]*")
_PYTHON_TOOLS = {"pip", "venv", "ensurepip", "site", "pip3", "torch.utils.collect_env"}  # not a job
# Per-rank scripts that only pick a device for the rank and run their arguments; the target's own
# binding replaces them. Known by name, or by what they do when they can be read.
_AFFINITY_NAME = re.compile(r"(?i).*(affinity|gpu_tile|tile_compact|select_gpu|gpu_bind|bind_gpu|set_gpu|"
                            r"local_rank|gpu_wrapper|gpu_select).*")
_SELECTS_DEVICE = re.compile(r"(CUDA|ROCR|HIP|ZE)_VISIBLE_DEVICES|ZE_AFFINITY_MASK")


@dataclass
class Launch:
    """One command that starts the training program, followed through its wrappers."""

    stages: list  # [(launcher, {option: [values]})], outermost first
    entry: Optional[str]
    args: list[str]
    shell: "Shell"  # where it ran: `shell.resolve` turns option values into counts
    score: int = 0
    env: dict = field(default_factory=dict)  # `VAR=x cmd`, `env VAR=x`, `mpiexec --env VAR=x`, `-x VAR`
    container: Optional[Container] = None
    wrapper: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    binding: Optional[str] = None  # a per-rank wrapper that binds each rank to one device (JobIntent.device_binding)
    loops: tuple = ()  # the script's loops that repeat it, outermost first (shell.Loop)

    def names(self) -> set:
        return {name for name, _ in self.stages}


@dataclass
class _Context:
    env: dict = field(default_factory=dict)
    container: Optional[Container] = None
    wrapper: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    binding: Optional[str] = None


def chain(argv: list[str], shell: "Shell", stages: list, ctx: Optional[_Context] = None) -> Optional[Launch]:
    """Follow a command (expanded words) through launchers and wrappers to the program it runs."""
    ctx = ctx or _Context()
    while argv and _ASSIGNMENT.fullmatch(argv[0]):
        name, _, value = argv[0].partition("=")
        ctx.env[name] = value
        argv = argv[1:]
    if not argv:
        return None
    named = named_runtime(argv) or named_command(argv)  # `$APPTAINER exec ...`, `$PYTHON -m pkg.train`, `$MPIRUN -np 8`
    argv = [named, *argv[1:]] if named else argv
    if len(argv) > 1 and (_UNKNOWN_WORD.fullmatch(argv[0]) or stages and from_arguments(argv[0]) and _command(argv[1])):
        # `srun $SRUN_ARGS python ...`, `srun "$@" sh -c '...'`: options only the job knows
        return chain(argv[1:], shell, stages, ctx)
    argv = [on_path(argv[0]), *argv[1:]]  # `$(which python) train.py` runs python
    head = argv[0].rsplit("/", 1)[-1]
    return _reader(head, argv)(head, argv, shell, stages, ctx)


_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=.*", re.S)
_UNKNOWN_WORD = re.compile(r"\$\{?\w+(?:\[[@*]\])?\}?")


def _command(word: str) -> bool:
    """Whether `word` is a command this module reads (python, a shell, a launcher, a container...)."""
    head = word.rsplit("/", 1)[-1]
    return head in _READERS or bool(_PYTHON.fullmatch(head))


def _reader(head: str, argv: list[str]):
    """How the command named `head` is read: one reader per kind of program (the table below)."""
    if is_submit([head, *argv[1:]]):  # before the table: `flux batch` submits, `flux run` launches
        return _submit
    if head in _READERS:
        return _READERS[head]
    if _PYTHON.fullmatch(head):
        return lambda _, argv, shell, stages, ctx: _python(argv, shell, stages, ctx)
    return _other


def _other(head: str, argv: list[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    return _program(argv, shell, stages, ctx)


def _plain(head: str, argv: list[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    return chain(argv[1:], shell, stages, ctx)


def _time(head: str, argv: list[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    """bash's keyword (`time -p`) or GNU time, with their options."""
    return chain(parse_options(argv[1:], TIME)[1], shell, stages, ctx)


def _timeout(head: str, argv: list[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    """`timeout [options] DURATION COMMAND`: the command, stopped after DURATION (the job's own limit)."""
    rest = parse_options(argv[1:], TIMEOUT)[1]
    ctx.notes.append(f"`{' '.join(argv[:len(argv) - len(rest) + 1])}` in front of the launch is not carried: the port's "
                     "walltime bounds the job; put it back if the program relies on its signal (a checkpoint on it)")
    return chain(rest[1:], shell, stages, ctx)


def _binding(head: str, argv: list[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    """numactl, taskset, env...: options, then the command (env's VAR=x words are read by chain)."""
    opts, rest = parse_options(argv[1:], PASSTHROUGH)
    if head == "taskset" and rest and "cpu_list" not in opts:
        rest = rest[1:]  # the affinity mask
    if head not in ("env", "stdbuf"):
        ctx.notes.append(f"{head} binding dropped: the target binds ranks to cores and devices itself")
    return chain(rest, shell, stages, ctx)


def _runner(head: str, argv: list[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    """`uv run`, `conda run -n env`: options, then the command."""
    if argv[1:2] != ["run"]:
        return _program(argv, shell, stages, ctx)
    opts, rest = parse_options(argv[2:], RUNNER)
    if head in ("conda", "mamba", "micromamba") and last(opts, "name"):
        shell.python_env = shell.python_env or f"{head} activate {last(opts, 'name')}"
    return chain(rest, shell, stages, ctx)


def _profiler(head: str, argv: list[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    rest = argv[2:] if argv[1:2] == ["profile"] else argv[1:]
    _, rest = parse_options(rest, PROFILER)
    ctx.wrapper = [*ctx.wrapper, *argv[:len(argv) - len(rest)]]
    return chain(rest, shell, stages, ctx)


def _shell(head: str, argv: list[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    """`bash -c '...'` (or combined, `sh -xeuc '...'`): the string read as a script; `bash x.sh`: x.sh."""
    flag = next((i for i, a in enumerate(argv[1:], 1) if re.fullmatch(r"-[a-z]*c[a-z]*", a)), None)
    if flag:
        return _command_string(head, argv, flag, shell, stages, ctx)
    operands = _shell_operands(argv[1:])
    if shell.stdin is not None and (not operands or operands[0] is None):
        # bash(1): "If no arguments remain after option processing, or -s is given, commands are read from
        # the standard input" (a here-document, `cat <<EOF |`, `< file`); -s's operands are its $1...
        return _input_script(shell, stages, operands[1:], ctx)
    return _program(argv[1:] if head != "zsh" and len(argv) > 1 else argv, shell, stages, ctx)


def _input_script(shell: "Shell", stages: list, positional: list[str], ctx: _Context) -> Optional[Launch]:
    """The script a shell reads from its input. It is a process of its own: what it exports, activates
    or loads reaches what it runs, not the job's later commands, so a set-up shell (`srun bash <<EOF`
    making an environment on each node) leaves the job's own environment as it was."""
    env, modules, python_env = dict(shell.env), list(shell.modules), shell.python_env
    found = inner(shell.stdin, shell, stages, positional, ctx)
    if found is None:
        shell.env.clear()
        shell.env.update(env)
        shell.modules[:], shell.python_env = modules, python_env
    return found


def _shell_operands(words: list[str]) -> list:
    """A shell's words after its options (`-l`, `-x`, `-o pipefail`, `--login`); led by None when -s
    is among them (the operands are then the positional parameters of what it reads)."""
    reads_input = False
    while words and words[0][:1] in "-+" and words[0] not in ("-", "--"):
        reads_input = reads_input or (words[0][:2] != "--" and "s" in words[0][1:])
        words = words[2:] if words[0] in ("-o", "+o", "-O", "+O") else words[1:]
    words = words[1:] if words[:1] in (["-"], ["--"]) else words
    return [None, *words] if reads_input else list(words)


def _command_string(head: str, argv: list[str], flag: int, shell: "Shell", stages: list,
                    ctx: _Context) -> Optional[Launch]:
    if flag + 1 >= len(argv):
        return None
    shell.budget.step(SYNTAX_CHECK_STEPS)  # `bash -n` is a process: a function calling it 10^4 times is not read
    problem = bash_syntax_error(argv[flag + 1])
    if problem:  # the port would carry a launch line bash cannot run
        raise MapleError(f"in the {head} -c command, {problem}; fix the shell syntax there")
    # after the string come $0 (a name) and then $1, $2... With none, a "$@" in the string is the
    # job's arguments the outer shell put there (`args="${@}"; srun bash -c "python t.py ${args}"`):
    # bash -c with no arguments has an empty "$@" of its own, so a string means it only that way.
    own = flag + 2 < len(argv) or shell.arguments_known
    return inner(argv[flag + 1], shell, stages, argv[flag + 3:], ctx, arguments_known=own)


def _submit(head: str, argv: list[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    shell.submits.append((argv, shell.stdin))  # another script submitted: extraction may port that one (extract/submit.py)
    return None


def _console(head: str, argv: list[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    found = console(head, argv, shell, stages, ctx)
    return found if found is not None else _program(argv, shell, stages, ctx)


def _mpi(head: str, argv: list[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    grammar = launcher(head)
    # the grammar skips a `$VAR` as options only the job knows: not one that names the command after the options
    at = next((j for j in range(1, len(argv)) if named_runtime(argv[j:]) or named_command(argv[j:])), len(argv))
    opts, rest = parse_options(argv[1:at], grammar.spec)
    opts, rest = (opts, argv[at:]) if not rest else parse_options(argv[1:], grammar.spec)
    for item in grammar.exports(opts):
        key, eq, value = item.partition("=")
        if eq or (key and key.isidentifier() and isinstance(shell.vars.get(key), str)):
            ctx.env[key] = value if eq else shell.vars[key]
    if head == "srun":
        pyxis(opts, shell, ctx)
    return chain(rest, shell, [*stages, (head, opts)], ctx)


def _subcommand_dl(name: str, subcommand: str, spec: Spec):
    """A launcher spelled with a subcommand (`accelerate launch`, `lightning run model`)."""
    def read(head: str, argv: list[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
        if argv[1:2] != [subcommand]:
            return _program(argv, shell, stages, ctx)
        return _dl_stage(name, [a for a in argv[2:] if a != "model"] if name == "torchrun" else argv[2:],
                         spec, shell, stages, ctx)
    return read


def _runs_next(argv: list[str]) -> bool:
    """Whether the word after the program is python, a framework's console script, a launcher, a
    container or binding tool, or (after a GPU-affinity wrapper known by name: `mpirun ./select_gpu
    ./train.py`) any program."""
    if len(argv) < 2:
        return False
    follower = argv[1]
    binds_device = bool(_AFFINITY_NAME.fullmatch(argv[0].rsplit("/", 1)[-1])) and follower[:1] != "-"
    return bool(_PYTHON.fullmatch(follower.rsplit("/", 1)[-1])) or binds_device or console_program(follower) or (
        follower in MPI_LAUNCHERS | DL_LAUNCHERS or follower in CONTAINERS or follower in _BINDING)


def _is_wrapper(argv: list[str], text: Optional[str]) -> bool:
    """A script in front of the program that runs its own arguments ("$@"), or one we cannot read."""
    program = argv[0]
    looks_like_script = "/" in program or program.endswith(".sh") or bool(_AFFINITY_NAME.fullmatch(program))
    runs_arguments = text is None or re.search(r'"\$(@|\{@\})"|\$\*|\$@', text)
    return looks_like_script and _runs_next(argv) and bool(runs_arguments)


def _through_wrapper(argv: list[str], text: Optional[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    """The program after a per-rank wrapper; a wrapper that only binds devices is dropped, others kept."""
    program = argv[0]
    if _AFFINITY_NAME.fullmatch(program.rsplit("/", 1)[-1]) or (text and _SELECTS_DEVICE.search(text)):
        ctx.notes.append(f"{program} only binds each rank to its device; the port binds each rank to one device the "
                         "target's way (or says where it cannot)")
        ctx.binding = program
    else:
        ctx.wrapper = [*ctx.wrapper, program]
        # whether a port keeps it is the port's to say, per target (values.port_wrapper, containers.wrapper_notes)
    return chain(argv[1:], shell, stages, ctx)


def _program(argv: list[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    """Any other program: a script the job runs is read and followed; a per-rank wrapper in front
    of python or a launcher is kept or replaced; else the program is the entrypoint."""
    program = argv[0]
    text = shell.read(program) if program.endswith(".sh") or "/" in program or program in shell.files else None
    text = site_wrapper(program) if text is None else text
    if text is None and program.startswith("/") and program.endswith(".sh"):  # a script at the site's path
        read_as, text = in_checkout(program, shell.read)
        ctx.notes += [f"{program} is outside the checkout, so it was read as {read_as}, the checkout's file at the "
                      "end of that path: check that it is the same script"] if read_as else []
    if _is_wrapper(argv, text):
        return _through_wrapper(argv, text, shell, stages, ctx)
    if text is not None:
        launch = inner(text, shell, stages, argv[1:], ctx, program)
        if launch:
            return launch
    return finish(stages, program, argv[1:], shell, ctx)


def _python(argv: list[str], shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    options, runs = python_command(argv[1:])
    if not runs or runs[0] in ("-c", "-"):
        return None  # inline code (or stdin) is not a training program we can port
    if runs[0].rsplit("/", 1)[-1] == "setup.py":
        return None  # setuptools' commands (setup.py install, develop, build_ext): set-up, never the job
    if options and PYTHON_OPTIONS_NOTE not in " ".join(ctx.notes):
        _carry_python_options(options, ctx)
    if runs[0] == "-m" and len(runs) > 1:
        module, rest = runs[1], runs[2:]
        if module in ("torch.distributed.run", "torch.distributed.launch", "torchrun_jsc"):
            return _dl_stage("torchrun", rest, TORCHRUN, shell, stages, ctx)
        if module == "accelerate.commands.launch":
            return _dl_stage("accelerate", rest, ACCELERATE, shell, stages, ctx)
        if module in ("deepspeed.launcher.runner", "deepspeed"):
            return _dl_stage("deepspeed", rest, DEEPSPEED, shell, stages, ctx)
        if module in _PYTHON_TOOLS:
            return None
        return finish([*stages, ("python", {})], f"-m {module}", rest, shell, ctx)
    return finish([*stages, ("python", {})], runs[0], runs[1:], shell, ctx)


def _carry_python_options(options: list[str], ctx: _Context) -> None:
    """python's own options go to the port as the variables python reads for them (every rank's
    python reads them, whatever starts the rank); those without one are named as not carried."""
    translated, kept_out = python_option_env(options)
    env = {name: value for name, value in translated.items() if _may_carry(name)}
    kept_out += [f"{name}={value}" for name, value in translated.items() if name not in env]
    for name, value in env.items():
        ctx.env.setdefault(name, value)
    shown, carried = " ".join(options), " ".join(f"{name}={value}" for name, value in env.items())
    if kept_out:
        ctx.notes.append(f"{PYTHON_OPTIONS_NOTE} ({shown}): {', '.join(kept_out)} not carried (no variable says it, "
                         "or templates/values.yaml does not let a port set it): add it to the port's python if the "
                         "program needs it" + (f"; the rest are carried as {carried}" if carried else ""))
    elif env:
        ctx.notes.append(f"{PYTHON_OPTIONS_NOTE} ({shown}) are carried as the variables python reads for them: {carried}")


def _may_carry(name: str) -> bool:
    """Whether the values table lets a port export the variable on every target (PYTHONWARNINGS may
    import a module, so it is not)."""
    rule = env_rule(name)
    return rule is not None and rule.verdict == "keep" and not rule.vendors


def _dl_stage(name: str, argv: list[str], spec: Spec, shell: "Shell", stages: list, ctx: _Context) -> Optional[Launch]:
    opts, rest = parse_options(argv, spec)
    stages = [*stages, (name, opts)]
    if not rest:
        return finish(stages, None, [], shell, ctx)
    if "module" in opts:
        return finish(stages, f"-m {rest[0]}", rest[1:], shell, ctx)
    if "no_python" in opts and _PYTHON.fullmatch(rest[0].rsplit("/", 1)[-1]):
        return _python(rest, shell, stages, ctx)
    return finish(stages, rest[0], rest[1:], shell, ctx)


def finish(stages: list, entry: Optional[str], args: list[str], shell: "Shell", ctx: _Context) -> Launch:
    entry = on_path(entry)
    return Launch(stages, entry, args, shell, score(stages, entry, args, shell), dict(ctx.env), ctx.container,
                  list(ctx.wrapper), list(ctx.notes), ctx.binding)


def inner(text: str, shell: "Shell", stages: list, positional: list[str], ctx: _Context,
          name: str = "bash", arguments_known: bool = True) -> Optional[Launch]:
    """The command string of `bash -c '...'`, or a script the job runs (`name`, its $0), with its arguments."""
    sub = shell.child(positional, name, arguments_known)
    sub.run_text(text)
    shell.python_env = sub.python_env or shell.python_env
    # scored with the stages around the string: `srun bash -c 'exec fairseq-train ...'` is a launch
    return best([finish([*stages, *found.stages], found.entry, found.args, found.shell,
                        _Context({**ctx.env, **found.env}, found.container or ctx.container,
                                 [*ctx.wrapper, *found.wrapper], [*ctx.notes, *found.notes],
                                 found.binding or ctx.binding))
                 for found in sub.launches])


_READERS = {
    **{name: _plain for name in _PLAIN_WRAPPERS}, "time": _time, "timeout": _timeout, **{name: _binding for name in _BINDING},
    **{name: _runner for name in RUNNERS},
    **{name: _profiler for name in ("nsys", "ncu", "nv-nsight-cu-cli", "rocprof")},
    **{name: container for name in CONTAINERS},
    **{name: _shell for name in ("bash", "sh", "zsh")}, **{name: remote for name in REMOTE},
    **{name: _console for name in CONSOLES}, **{name: _mpi for name in MPI_LAUNCHERS},
    "torchrun": lambda head, argv, shell, stages, ctx: _dl_stage("torchrun", argv[1:], TORCHRUN, shell, stages, ctx),
    "deepspeed": lambda head, argv, shell, stages, ctx: _dl_stage("deepspeed", argv[1:], DEEPSPEED, shell, stages, ctx),
    "accelerate": _subcommand_dl("accelerate", "launch", ACCELERATE),
    "lightning": _subcommand_dl("torchrun", "run", TORCHRUN), "fabric": _subcommand_dl("torchrun", "run", TORCHRUN),
}
