"""Set-up the program needs that a port does not carry, named with its line (issue 25, class 7):
the commands of the launch's own command string (`srun bash -c "cd repo; pip install -e .; python
t.py"`), packages the job installs, a file the job writes and the launch then reads (an accelerate
`--config_file`), the job array index the program reads, the launcher's own CPU binding.

A port runs its own set-up and the launch; these notes keep anything else the program depends on
from being dropped silently. Each rule is about what bash and the launchers do, not about a script.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

from .. import schedulers
from .frameworks import program_source, runtime_setup

if TYPE_CHECKING:
    from .launch import Launch
    from .walk import Shell

# Commands that only report (their absence changes nothing the program sees)
REPORTING = re.compile(r"echo|printf|date|hostname|\w+-smi|env|printenv|sleep|set|ulimit|which|pwd|ls|cat|df|free|"
                       r"uname|lscpu|nproc|true|:|wait|sync|time|break|continue|exit|return")
# `pip install`, `python -m pip install`, `uv pip install`, `conda install`, `python setup.py develop`
_INSTALL = re.compile(r"(?:\S*/)?(?:(?:python[\d.]*\s+-m\s+)?pip\d?|uv\s+pip|conda|mamba|micromamba)\s+install\b.*"
                      r"|(?:\S*/)?python[\d.]*\s+setup\.py\s+(?:install|develop)\b.*", re.S)
# Creating a Python environment: `python -m venv`, `virtualenv`, `uv venv`, `conda create`, `conda env create`
_CREATE_ENV = re.compile(r"(?:\S*/)?(?:python[\d.]*\s+-m\s+(?:venv|virtualenv)|virtualenv|uv\s+venv"
                         r"|(?:conda|mamba|micromamba)\s+(?:env\s+)?create)\b.*", re.S)
# Launcher options that bind ranks to cores (srun's, Hydra/PALS's, Open MPI's; grammars.yaml names)
_BINDING = ("cpu_bind", "hint", "distribution", "bind_to", "map_by", "depth", "cpus_per_proc")


def setup_notes(shell: "Shell", launch: Optional["Launch"], line: Optional[int],
                array: Optional[list[str]]) -> tuple[list[str], set]:
    """(notes naming the set-up the port does not carry, the top-level lines they name). `line` is
    the launch's line; `array` the job array directives the port drops (None: the port carries the
    array in the target's form, schedulers/arrays.py)."""
    if launch is None:
        return [], set()
    found = [_inner_commands(shell, launch, line), _environments(shell), _installs(shell), _wrapper_installs(shell, launch),
             _written(shell, launch), _array(shell, launch, array), _binding(launch, line), _runtime(shell)]
    notes = [note for note, _ in found if note]
    return notes, {n for _, lines in found for n in lines}


def _words(words: list[str]) -> str:
    return " ".join(words)[:80]


def _inner_commands(shell: "Shell", launch: "Launch", line: Optional[int]) -> tuple[Optional[str], set]:
    """The commands a launch's command string or script runs besides the program (`cd repo`), and
    those of the other strings, scripts and inputs the job's shells read (`srun bash <<EOF` making a
    virtualenv on each node): the port runs the program alone, from the submit directory."""
    steps = [(at, words) for at, words, found in shell.inner
             if words and not _is(found, launch) and not REPORTING.fullmatch(words[0].rsplit("/", 1)[-1])
             and not _INSTALL.fullmatch(" ".join(words)) and not _CREATE_ENV.fullmatch(" ".join(words))]
    if not steps:  # an install and an environment have their own notes
        return None, set()
    own = "; ".join(f"`{_words(words)}` (line {at})" for at, words in steps if at == line)
    other = "; ".join(f"`{_words(words)}` (in the shell of line {at})" for at, words in steps if at != line)
    shown = ", and ".join(([f"the launch's command string also runs {own}"] if own else [])
                          + ([f"the job's other shells run {other}"] if other else []))
    return (f"{shown}, which the port does not: the program runs alone, from the submit directory; do these steps "
            "in your environment on the target or write them in the port"), set()


def _environments(shell: "Shell") -> tuple[Optional[str], set]:
    """A Python environment the job creates (`virtualenv $SLURM_TMPDIR/env`, `conda env create -f
    environment.yml`) for the program to run in: the port runs in the target's set-up instead."""
    found = [(line, words) for line, words, _ in [*shell.commands, *shell.inner] if _CREATE_ENV.fullmatch(" ".join(words))]
    if not found:
        return None, set()
    shown = "; ".join(f"`{_words(words)}` (line {line})" for line, words in found[:4])
    return (f"the source creates the Python environment its program runs in ({shown}); the port does not: it uses "
            "the target's framework set-up; create the environment once on the target and give it with --python-env"
            ), {line for line, words in found if any(at == line and own == words for at, own, _ in shell.commands)}


def _is(found, launch: "Launch") -> bool:
    return bool(found) and found.entry == launch.entry and found.args == launch.args


def _installs(shell: "Shell") -> tuple[Optional[str], set]:
    """Packages the job installs (often the program's own: `pip install -e .`)."""
    found = [(line, words) for line, words, launch in [*shell.commands, *shell.inner]
             if _INSTALL.fullmatch(" ".join(words)) or launch and _INSTALL.fullmatch(" ".join([launch.entry or "", *launch.args]))]
    if not found:
        return None, set()
    shown = "; ".join(f"`{_words(words)}` (line {line})" for line, words in found[:4])
    return (f"the source installs packages in the job ({shown}); the port does not: install them once in your "
            "environment on the target and give it with --python-env"), {line for line, _ in found}


def _wrapper_installs(shell: "Shell", launch: "Launch") -> tuple[Optional[str], set]:
    """Packages a per-rank wrapper script of the checkout installs before it runs the program
    (`srun install.sh python t.py`, install.sh: `pip install -r requirements.txt; exec "$@"`): a port
    keeps such a wrapper only when it can find it there (values.port_wrapper), so its set-up is named."""
    words = launch.wrapper
    script = words[1] if words[:1] in (["bash"], ["sh"]) and len(words) > 1 else words[0] if words else ""
    text = shell.read(script.removeprefix("./")) if script else ""
    found = [(line, row.strip()) for line, row in enumerate((text or "").splitlines(), 1)
             if _INSTALL.fullmatch(row.strip())]
    if not found:
        return None, set()
    shown = "; ".join(f"`{command[:80]}` ({script} line {line})" for line, command in found[:4])
    return (f"the per-rank wrapper {script} installs packages before the program ({shown}); where the port does not "
            "keep the wrapper, install them once in your environment on the target and give it with --python-env"), set()


def _written(shell: "Shell", launch: "Launch") -> tuple[Optional[str], set]:
    """A file the job writes and the launch reads (a config it names): the port does not write it."""
    read = {launch.entry, *launch.args, *(v for _, opts in launch.stages for values in opts.values() for v in values)}
    read = {word.split("=", 1)[-1].removeprefix("./") for word in read if isinstance(word, str)}
    found = [(path, line) for path, line in shell.written.items() if path in read]
    if not found:
        return None, set()
    shown = ", ".join(f"{path} (line {line})" for path, line in found)
    return (f"the job writes {shown}, which the launch reads; the port does not write it: keep the file in the "
            "repository where the port runs, or write it before the launch"), {line for _, line in found}


def _array_variables() -> set[str]:
    return {name for unit in map(schedulers.get, schedulers.names()) for name in unit.job_vars.get("array_index", ())}


def _array(shell: "Shell", launch: "Launch", array: Optional[list[str]]) -> tuple[Optional[str], set]:
    """A job array whose program reads the array index: the port is one job when it does not carry
    the array; when it does, the script's words are translated (jobvars.py) but not the program's own
    reads of its environment."""
    texts = {"its arguments": " ".join([launch.entry or "", *launch.args]),
             "the script's variables": " ".join(v for v in shell.vars.values() if isinstance(v, str)),
             launch.entry or "the program": program_source(launch.entry, shell)}
    if array is None:
        texts = {where: text for where, text in texts.items() if where == (launch.entry or "the program")}
    reads = sorted({(name, where) for name in _array_variables() for where, text in texts.items()
                    if re.search(rf"\b{name}\b", text)})
    if not reads:
        return None, set()
    if array is None:
        shown = ", ".join(name for name, _ in reads)
        return (f"the program reads the job array's index itself ({shown} in {reads[0][1]}); the port carries the "
                "array, but a target of another scheduler sets its own index variable: export it under this "
                "name before the launch there"), set()
    given = f" ({', '.join(array)})" if array else ""
    shown = ", ".join(f"{name} in {where}" for name, where in reads)
    return (f"the job reads the job array's index ({shown}); the port is one job, not an array{given}: "
            "submit it as an array on the target, or the index is empty"), set()


def _binding(launch: "Launch", line: Optional[int]) -> tuple[Optional[str], set]:
    """The launcher's own core binding, which the port replaces with the target's."""
    words = [f"--{name.replace('_', '-')}={value}" for _, opts in launch.stages for name in _BINDING
             for value in opts.get(name, []) if isinstance(value, str)]
    if not words:
        return None, set()
    where = f" (line {line})" if line else ""
    return (f"the source binds its ranks to cores with {' '.join(words)}{where}; the port binds them the "
            "target's way (the source's OMP_* settings: see their own notes)"), set()


def _runtime(shell: "Shell") -> tuple[Optional[str], set]:
    """A framework runtime the job starts for its driver program (`ray start --head`)."""
    found = [(line, words, launch) for line, words, launch in [*shell.commands, *shell.inner]
             if launch and runtime_setup(launch.entry, launch.args)]
    if not found:
        return None, set()
    shown = "; ".join(f"`{_words(words)}` (line {line})" for line, words, _ in found[:4])
    return (f"the job starts the runtime its program joins ({shown}); the port does not: start it in the port "
            "before the program, or the program finds no cluster"), {line for line, _, _ in found}
