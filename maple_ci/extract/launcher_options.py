"""The per-node launcher's own options, as the source gives them, for the port to carry or name
(maple_ci/launch_options.py); kept apart from the launch chain's reading (launch.py), which
only follows them to the program."""

from __future__ import annotations

from typing import Optional

from ..launchers import DL_LAUNCHERS
from .launch import Launch


def launcher_options(launch: Optional[Launch]) -> dict[str, str]:
    """The innermost torchrun, deepspeed or accelerate stage's options by the registry's names, each
    with its last value as the walk expanded it ("" for a flag); {} when no such launcher runs."""
    stage = next((opts for name, opts in reversed(launch.stages) if name in DL_LAUNCHERS), None) if launch else None
    return {name: values[-1] for name, values in (stage or {}).items()}
