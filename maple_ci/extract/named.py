"""A command named by a variable the job's environment sets, in command position: a module's
`$MPIRUN -np 8`, a venv's `$PYTHON -m pkg.train`, `${TORCHRUN_BIN} ...`. The variable is unknown
here, but its name says which command it holds, so the words after it are read as that command's
(python's own `-m`, never srun's `-m` distribution). Container runtimes named so are containers.py's.
"""

from __future__ import annotations

import re
from typing import Optional

from ..launchers import DL_LAUNCHERS, MPI_LAUNCHERS

RUNNERS = ("uv", "pipenv", "poetry", "conda", "mamba", "micromamba", "pixi")  # `X run [opts] CMD`
# $PYTHON, $PYTHON3, ${PYTHON_BIN}, $CONDA_PYTHON, $PY_EXE; not $PYTHON_LOG, $PYTHONPATH or $TRAIN_PY
_NAMED_PYTHON = re.compile(r"(?i)\$\{?(?:(?:\w+_)?python[\d.]*|py)(?:_?(?:bin|exe|exec|cmd|interpreter))?\}?")
_NAMED = re.compile(r"\$\{?([A-Za-z]\w*?)(?:_(?:BIN|EXE|EXEC|CMD|bin|exe|exec|cmd))?\}?")


def named_command(argv: list[str]) -> Optional[str]:
    """The command the variable argv[0] is named for, when words follow it: python, or a launcher or
    runner the launch chain reads (`$TORCHRUN`, `$MPIEXEC_CMD`, `$CONDA run -n env`); else None."""
    if len(argv) < 2:
        return None
    if _NAMED_PYTHON.fullmatch(argv[0]):
        return "python"
    found = _NAMED.fullmatch(argv[0])
    name = found[1].lower() if found else ""
    return name if name in MPI_LAUNCHERS | DL_LAUNCHERS or name in RUNNERS else None
