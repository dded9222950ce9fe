"""The per-node launcher's own options, as the source gives them, for the port to carry or name
(maple_ci/launch_options.py); kept apart from the launch chain's reading (launch.py), which
only follows them to the program."""

from __future__ import annotations

from typing import Optional

from ..launchers import DL_LAUNCHERS, launcher
from .launch import Launch


def launcher_options(launch: Optional[Launch]) -> dict[str, str]:
    """The innermost torchrun, deepspeed or accelerate stage's options by the registry's names, each
    with its last value as the walk expanded it ("" for a flag); {} when no such launcher runs."""
    stage = next((opts for name, opts in reversed(launch.stages) if name in DL_LAUNCHERS), None) if launch else None
    return {name: values[-1] for name, values in (stage or {}).items()}


# The sections of an accelerate config whose keys are the launcher's option names (accelerate's
# commands/launch.py fills its arguments from them when no flag gives one; read 2026-11-29).
_CONFIG_SECTIONS = ("fsdp_config", "deepspeed_config", "dynamo_config")


def config_options(config: Optional[dict]) -> dict[str, str]:
    """The settings of an accelerate config file that are accelerate's behaviour options (grammars.yaml),
    as text (true/false for booleans); nested sections flattened; anything else left to the file."""
    accelerate = launcher("accelerate")
    flat = dict(config or {})
    for section in _CONFIG_SECTIONS:
        flat.update(flat.get(section) if isinstance(flat.get(section), dict) else {})
    return {name: str(value).lower() if isinstance(value, bool) else str(value) for name, value in flat.items()
            if isinstance(value, (str, int, float)) and accelerate.role(name) == "behaviour" and accelerate.variable(name)}
