"""The parallel strategy in the program's own words: the model-parallel degrees its flags and config
files give, its strategy flags (`--fsdp`, `--use_ddp`, `--zero_stage 2`, `--strategy deepspeed_stage_3`),
and the ZeRO stage of its DeepSpeed config, a file it is given or the dict it builds itself. Each
reader answers a strategy, None (the program decides at run time, or in words maple does not map) or
NEXT (it does not say). Read as text only, never run.

Degrees, by each component's own spelling: Megatron-LM's `--tensor-model-parallel-size`,
`--pipeline-model-parallel-size` and `--context-parallel-size` (megatron/training/arguments.py),
torchtitan's `[parallelism]` `tensor_parallel_degree`, `pipeline_parallel_degree` and
`context_parallel_degree` ("1 means disabled", torchtitan/config/job_config.py), and a program's
own `--tensor_parallel` / `--context_parallel` flags; all read 2026-11-29.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from .directives import count

NEXT = object()  # a step of the strategy reading that does not decide
_OFF = ("false", "0", "no", "none", "off")  # a switch's value that turns it off


def option_in_args(args: list[str], *names: str) -> Optional[str]:
    """Value of --name / --name=value among program arguments ('' for a flag without value)."""
    spellings = {f"--{n}" for n in names} | {f"--{n.replace('_', '-')}" for n in names}
    for i, arg in enumerate(args):
        option, eq, value = arg.partition("=")
        if option in spellings:
            if eq:
                return value
            following = args[i + 1] if i + 1 < len(args) else ""
            return "" if following.startswith("-") else following
    return None


def zero_from(value) -> Optional[str]:
    stage = str(value).strip()
    return f"zero{stage}" if stage in ("1", "2", "3") else None


def strategy_word(value: Optional[str]) -> Optional[str]:
    """A strategy named in an argument value: fsdp, deepspeed_stage_3, zero2, ddp..."""
    if not value:
        return None
    lowered = value.lower()
    if "fsdp" in lowered or "full_shard" in lowered or "shard_grad_op" in lowered:
        return "fsdp"
    if match := re.search(r"(?:stage|zero)[_-]?([123])", lowered):
        return f"zero{match.group(1)}"
    if "ddp" in lowered:
        return "ddp"
    return None


# Megatron's own flags (they also make the program Megatron's: kind.framework)
MEGATRON_TP_PP = ("tensor-model-parallel-size", "pipeline-model-parallel-size")
# Every spelling of a degree: Megatron's, torchtitan's (as `--parallelism.x_degree`), a program's own
_DEGREE_FLAGS = {"tp": ("tensor-model-parallel-size", "tensor_parallel_degree", "tensor_parallel"),
                 "pp": ("pipeline-model-parallel-size", "pipeline_parallel_degree", "pipeline_parallel"),
                 "cp": ("context-parallel-size", "context_parallel_degree", "context_parallel")}


def parallel_sizes(args: list[str], resolve, flags=MEGATRON_TP_PP) -> list[Optional[int]]:
    """The degrees `flags` give, as flags (`--x 2`, `--section.x=2`) or Hydra overrides (`a.x=2`);
    1 where not given, None where only the run knows."""
    return [_degree(args, resolve, flag) for flag in flags]


def _degree(args: list[str], resolve, flag: str) -> Optional[int]:
    value = option_in_args(args, flag)
    if value is None:
        name = re.escape(flag).replace("\\-", "[-_]")
        dotted = re.compile(rf"(?:--)?[\w.+]*?\b{name}(?:=(\S+))?")
        for i, arg in enumerate(args):
            if match := dotted.fullmatch(arg):
                value = match[1] if match[1] is not None else (args[i + 1] if arg.startswith("--") and i + 1 < len(args) else None)
                break
    if value is None:
        return 1
    value = resolve(value)
    if value is None or "$" in value:
        return None  # only the run knows it
    if count(value) is not None:
        return count(value)
    # a switch (`--tensor_parallel`, `--context_parallel true`): on, at a degree the program picks
    return 1 if value.lower() in _OFF else 2


# Model-parallel degrees as config files write them: nanotron's `tp: 2`, torchtitan's
# `tensor_parallel_degree = 2`, DeepSpeed/HF `tensor_parallel_size: 2`, picotron's JSON
# `"tp_size": 2`, Megatron's `tensor_model_parallel_size: 2` (a key quoted or not); context
# parallelism only in its long or sized spellings (a bare `cp:` key may be anything)
_CONFIG_DEGREE = {kind: re.compile(rf"(?m)(?:^|[{{,])[ \t]*([\"']?)(?:{short}|{long}(?:_model)?_parallel_(?:size|degree))"
                                   rf"\1\s*[:=]\s*(\d+)\b")
                  for kind, short, long in (("tp", r"tp(?:_size|_degree)?", "tensor"),
                                            ("pp", r"pp(?:_size|_degree)?", "pipeline"),
                                            ("cp", r"cp_(?:size|degree)", "context"))}
# A program that shards its layers over the ranks with PyTorch's tensor-parallel API
_TP_API = re.compile(r"\b(?:ColwiseParallel|RowwiseParallel)\b|\bparallelize_module\(")


def _config_parallel(program: str) -> list[int]:
    """(tensor, pipeline, context) degrees the program's config files set; 1 where they set none."""
    found = [_CONFIG_DEGREE[kind].search(program) for kind in ("tp", "pp", "cp")]
    return [int(match.group(2)) if match else 1 for match in found]


def model_parallel(args: list[str], resolve, program: str):
    """The strategy the model-parallel degrees make: pipeline stages (with or without tensor
    parallelism) or tensor and context parallelism together are "3d", tensor or context
    parallelism alone "tp" or "cp"; None when a degree is only known at run time."""
    sizes = []
    for flags in _DEGREE_FLAGS.values():
        degrees = parallel_sizes(args, resolve, flags)
        sizes.append(None if None in degrees else max(degrees))
    if None in sizes:
        return None  # model-parallel sizes only known at run time
    if sizes == [1, 1, 1]:
        sizes = _config_parallel(program)
    tp, pp, cp = sizes
    if sizes == [1, 1, 1] and _TP_API.search(program):
        return "tp"  # the degree is the program's own (often the whole world)
    if pp > 1 or (tp > 1 and cp > 1):
        return "3d"
    return "tp" if tp > 1 else "cp" if cp > 1 else NEXT


def _switched_on(args: list[str], *names: str) -> bool:
    value = option_in_args(args, *names)
    return value is not None and value.lower() not in _OFF


def argument_strategy(args: list[str], resolve):
    """The strategy the program's own flags pick: HF Trainer's `--fsdp "full_shard"`, a program's
    `--use_fsdp` / `--use_ddp` switches, `--zero_stage N`, `--strategy X` (Lightning's names)."""
    if _switched_on(args, "fsdp", "use_fsdp"):
        return "fsdp"
    for name in ("zero_stage", "zero-stage", "zero"):
        if (stage := option_in_args(args, name)) is not None:
            return zero_from(resolve(stage))
    if _switched_on(args, "ddp", "use_ddp"):
        return "ddp"
    named = option_in_args(args, "strategy", "trainer.strategy")
    if named is None:  # a Hydra override of the Trainer's (`trainer.strategy=ddp`, `+trainer.strategy=...`)
        named = next((match[1] for match in map(_HYDRA_STRATEGY.fullmatch, args) if match), None)
    return strategy_word(resolve(named)) or NEXT


# Hydra's override grammar: `key=value`, `+key=value` (add), `++key=value` (add or override);
# https://hydra.cc/docs/advanced/override_grammar/basic/, read 2026-11-29
_HYDRA_STRATEGY = re.compile(r"\+{0,2}(?:\w+\.)*trainer\.strategy=(\S+)")


def deepspeed_strategy(ds_path: Optional[str], ds_cfg: Optional[dict]):
    """The ZeRO stage of the DeepSpeed config the program is given (`zero_optimization.stage`,
    https://www.deepspeed.ai/docs/config-json/, read 2026-11-29; 0 is plain data parallel)."""
    if ds_cfg is not None:
        return zero_from((ds_cfg.get("zero_optimization") or {}).get("stage", 0)) or NEXT
    if ds_path:
        return strategy_word(Path(ds_path).stem)  # unreadable: only its name can say, else unknown
    return NEXT


# The ZeRO stage a DeepSpeed config the program is given writes (`"zero_optimization": {"stage": 1}`
# in GPT-NeoX's YAML), or one the program's source builds as a dict for
# deepspeed.initialize(config=...), which then needs no --deepspeed_config
# (https://www.deepspeed.ai/getting-started/, read 2026-11-29)
_OWN_ZERO = re.compile(r"""["']zero_optimization["']\s*:\s*\{[^{}]*?["']stage["']\s*:\s*(\d)""")
# The strategy a Lightning program names where it builds its Trainer or Fabric (`L.Fabric(devices=2,
# strategy="ddp")`; Lightning's registered names: https://lightning.ai/docs/pytorch/stable/extensions/strategy.html, read 2026-11-29)
_LIGHTNING_STRATEGY = re.compile(r"""\b(?:Trainer|Fabric)\((?:[^()]|\([^()]*\))*?\bstrategy\s*=\s*["'](\w+)["']""")


def program_zero(program: str):
    """The ZeRO stage of the DeepSpeed config in the program's text."""
    found = _OWN_ZERO.search(program)
    return (zero_from(found[1]) or NEXT) if found else NEXT


def lightning_strategy(program: str):
    """The strategy the program's Lightning Trainer or Fabric is built with ("auto" says nothing)."""
    found = _LIGHTNING_STRATEGY.search(program)
    return (strategy_word(found[1]) or NEXT) if found else NEXT
