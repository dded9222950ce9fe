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


# The sections of an accelerate config whose keys are the launcher's options, with the prefix its
# launch command adds to a key that lacks it (commands/launch.py, _validate_launch_command: the
# config fills each argument no flag gave; read 2026-11-29 at huggingface/accelerate 16cb6eb8).
_CONFIG_SECTIONS = {"fsdp_config": "fsdp_", "fp8_config": "fp8_", "dynamo_config": "dynamo_", "deepspeed_config": ""}


def _flat(config: dict) -> dict:
    flat = dict(config)
    for section, prefix in _CONFIG_SECTIONS.items():
        entries = config.get(section) if isinstance(config.get(section), dict) else {}
        flat.update({key if key.startswith(prefix) else prefix + key: value for key, value in entries.items()})
    return flat


def _text(name: str, value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    # the launcher writes the precision as PrecisionType(value.lower()): `BF16` in a config is bf16
    return str(value).lower() if name == "mixed_precision" else str(value)


def config_options(config: Optional[dict]) -> dict[str, str]:
    """The settings of an accelerate config file that are accelerate's behaviour options with a
    variable for the workers (grammars.yaml), as text; anything else is left to the file."""
    accelerate = launcher("accelerate")
    return {name: _text(name, value) for name, value in _flat(config or {}).items()
            if isinstance(value, (str, int, float)) and accelerate.variable(name)}
