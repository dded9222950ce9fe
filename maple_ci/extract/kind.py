"""What kind of job a launch is: its framework, its parallel strategy and the config files that
say so. Read from the launch line, the program's arguments, and the program and configs it names
when they are in the checkout (as text, never run)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

import yaml

from .frameworks import (LIGHTNING_CONSOLES, other_framework, program_source, tensorflow_single,
                         tensorflow_strategy)
from ..launchers import DL_LAUNCHERS, MPI_LAUNCHERS, RANK_VARIABLES
from .launch import Launch
from .options import last
from .parallel import (NEXT, argument_strategy, deepspeed_strategy, lightning_strategy, model_parallel, option_in_args,
                       parallel_sizes, program_zero, strategy_word, zero_from)
from .ray_cluster import ENGINE_SIZES, engine_strategy
from .walk import Shell


def read_config(path: Optional[str], shell: Shell) -> Optional[dict]:
    """A JSON or YAML config the script names, read inside the checkout; None when it cannot be
    (never fatal: the script may not even use it)."""
    text = shell.read(path) if path else None
    if text is None:
        return None
    try:
        data = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


_MEGATRON_ENTRY = re.compile(r"(?i)(?:.*/)?(?:pretrain_(?:gpt|bert|t5|mamba|retro|ict|vlm|vision|llama|mixtral|mistral)\w*\.py"
                             r"|.*megatron.*)")
_LIGHTNING = re.compile(r"^[ \t]*(?:import|from)[ \t]+(?:lightning|pytorch_lightning|nemo)\b", re.M)
_FSDP = re.compile(r"(?i)\bfsdp\b|fully_shard|full_shard|shard_grad_op|hybrid_shard|FullyShardedDataParallel|"
                   r"data_parallel_shard_degree")
# One process that splits each batch over its node's GPUs: torch.nn.DataParallel(model), which
# DistributedDataParallel does not match (https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html, read 2026-11-29)
_DATA_PARALLEL = re.compile(r"\bDataParallel\s*\(")
# A Python config in InternEvo's (and ColossalAI's legacy) own words for the parallel layout,
# `parallel = dict(zero1=..., tensor=..., pipeline=...)` (https://github.com/InternLM/InternEvo,
# doc/en/parallel.md, read 2026-11-29): the framework decides, in a vocabulary maple does not map
_OWN_LAYOUT = re.compile(r"(?m)^parallel\s*=\s*dict\(")
# What forms a process group in a program's source: PyTorch's, or a framework that forms one for it
_PROCESS_GROUP = re.compile(r"init_process_group|torch\.distributed|DistributedDataParallel|deepspeed|accelerate|"
                            r"Accelerator|horovod|lightning|jax\.distributed|mpi4py|colossalai|composer")
# A program built as pipeline stages: DeepSpeed's deepspeed.pipe.PipelineModule
# (https://www.deepspeed.ai/tutorials/pipeline/) or torch.distributed.pipelining's PipelineStage
# (https://pytorch.org/docs/stable/distributed.pipelining.html), both read 2026-11-29
_PIPELINE = re.compile(r"\b(?:PipelineModule|PipelineStage)\b")
# A program that drives its processes through Hugging Face Accelerate: it imports it and builds an
# Accelerator (https://huggingface.co/docs/accelerate/basic_tutorials/migration, read 2026-11-29);
# its utilities alone (init_empty_weights, set_seed) leave the program as its launcher runs it
_ACCELERATE = re.compile(r"^[ \t]*(?:import|from)[ \t]+accelerate\b", re.M)
_ACCELERATOR = re.compile(r"\bAccelerator\s*\(")


def program_text(launch: Launch, shell: Shell, files: list[str]) -> str:
    """What the program, the checkout's modules it imports and the config files its arguments name
    say, when they are in the checkout: `import lightning`, FSDP settings, a DataParallel wrapper in
    its trainer module. Read as text only, inside the checkout, never run."""
    named = [a.split("=", 1)[-1] for a in launch.args]
    texts = files + [shell.read(path) for path in named if re.search(r"\.(?:py|ya?ml|json|toml)$", path)]
    return "\n".join([" ".join(launch.args), *(text for text in texts if text)])


def framework(launch: Optional[Launch], deepspeed_config: Optional[str], program: str, files: list[str]) -> str:
    """The program's framework; `files` are its program_files, `program` its program_text."""
    if launch is None:
        return "pytorch"
    names = launch.names()
    args = launch.args
    other = other_framework(launch, files)
    if other:
        return other
    if "accelerate" in names:
        return "accelerate"
    if _MEGATRON_ENTRY.fullmatch(launch.entry or "") or any(
            size is None or size > 1 for size in parallel_sizes(args, launch.shell.resolve)):
        return "megatron"  # Megatron-DeepSpeed too: its DeepSpeed flags serve Megatron's program
    if "deepspeed" in names:
        return "deepspeed"
    # a Lightning program given a DeepSpeed config (`--strategy deepspeed --ds_config x.json`) is Lightning's
    if ("lightning" in (launch.entry or "").lower() or launch.entry in LIGHTNING_CONSOLES
            or any(a.startswith(("--trainer.", "trainer.")) for a in args) or _LIGHTNING.search(program)):
        return "lightning"
    if deepspeed_config or option_in_args(args, "deepspeed") is not None:
        return "deepspeed"
    return "accelerate" if _ACCELERATE.search(program) and _ACCELERATOR.search(program) else "pytorch"


def deepspeed_config(launch: Launch) -> Optional[str]:
    for name, opts in launch.stages:
        if name == "accelerate" and last(opts, "deepspeed_config_file"):
            return last(opts, "deepspeed_config_file")
    named = option_in_args(launch.args, "deepspeed_config", "deepspeed_config_file", "ds_config")
    if named:
        return named
    value = option_in_args(launch.args, "deepspeed")  # Hugging Face Trainer: --deepspeed ds.json
    return value if value and re.search(r"\.(json|ya?ml)$", value) else None


def strategy(launch: Optional[Launch], world: Optional[int], ds_path: Optional[str],
              ds_cfg: Optional[dict], acc_path: Optional[str], acc_cfg: Optional[dict], program: str) -> Optional[str]:
    """The first of these that decides: model-parallel sizes, pipeline stages in the program,
    accelerate's options or config, the program's arguments, the DeepSpeed config, the strategy its
    Lightning Trainer or Fabric names, the ZeRO stage in its text, FSDP in the program; else data
    parallel by size (one process: DataParallel's dp or single)."""
    if launch is None:
        return None
    resolve, args = launch.shell.resolve, launch.args
    acc = next((o for n, o in launch.stages if n == "accelerate"), None)
    steps = (lambda: model_parallel(args, resolve, program),
             lambda: "pp" if _PIPELINE.search(program) else NEXT,
             lambda: _accelerate_strategy(acc, acc_path, acc_cfg, resolve),
             lambda: argument_strategy(args, resolve),
             lambda: deepspeed_strategy(ds_path, ds_cfg),
             lambda: lightning_strategy(program),
             lambda: program_zero(program),
             lambda: "fsdp" if _FSDP.search(program) else NEXT,
             lambda: None if _OWN_LAYOUT.search(program) or _shards(launch, program) else NEXT,
             lambda: _accelerate_default(acc, acc_path))
    for step in steps:
        found = step()
        if found is not NEXT:
            return found
    if world is None:  # a size chosen at run time: data parallel when the launch is parallel at all
        return "ddp" if launch.names() & (MPI_LAUNCHERS | DL_LAUNCHERS) else None
    if world == 1:
        return "dp" if _DATA_PARALLEL.search(program) else "single"
    return "ddp"


# Programs outside PyTorch's family whose processes are data-parallel replicas unless their own words
# say otherwise: fairseq wraps its model in DDP by default (--ddp-backend pytorch_ddp, fairseq's
# options reference), LLaMA-Factory runs torchrun's DDP unless its YAML names DeepSpeed or FSDP (its
# examples/README.md), a multi-process JAX job replicates its step over the processes (the corpus's
# reading): PyTorch's steps read them. The others parallelise in their own words or not at all.
REPLICAS = ("fairseq", "llamafactory", "jax")


def own_strategy(framework: str, launch: Optional[Launch], program: str, world: Optional[int],
                 gpus_per_node: Optional[int]):
    """The strategy of a program outside PyTorch's family in its framework's own words; NEXT for
    one whose processes are replicas (REPLICAS: PyTorch's steps decide), unless one process drives
    several devices (JAX's pmap or sharding: its code decides); else single for one process on one
    device (a TensorFlow one on the first it sees, unless its code chooses); else None. PyTorch's
    size rule says nothing about a Horovod, Ray or vLLM job (hvd.allreduce, actors, engine-parallel
    sizes) nor about a MirroredStrategy process on several devices."""
    named = None
    if framework == "tensorflow":
        named = tensorflow_strategy(program)
    elif framework == "llamafactory" and launch is not None:
        return _llamafactory_strategy(launch)
    elif framework in ENGINE_SIZES and launch is not None:
        named = engine_strategy(launch, framework)
    if named or (framework in REPLICAS and not (world == 1 and (gpus_per_node or 1) > 1)):
        return named or NEXT
    one_device = gpus_per_node == 1 or (framework == "tensorflow" and tensorflow_single(program))
    return "single" if world == 1 and one_device else None


def _shards(launch: Launch, program: str) -> bool:
    """Whether each process is handed its own rank as a positional argument (`gen.py 8
    $OMPI_COMM_WORLD_RANK`: a shard of independent work) by a program whose source, in the checkout,
    forms no process group: processes, but no strategy."""
    ranks = {f"${name}" for name in RANK_VARIABLES} | {f"${{{name}}}" for name in RANK_VARIABLES}
    args = launch.args
    positional = [arg for i, arg in enumerate(args) if not (i and args[i - 1].startswith("-"))]
    return (bool(ranks & set(positional)) and bool(program_source(launch.entry, launch.shell))
            and not _PROCESS_GROUP.search(program))


def _llamafactory_strategy(launch: Launch) -> Optional[str]:
    """LLaMA-Factory reads its training YAML (`llamafactory-cli train cfg.yaml`); its `deepspeed`
    key names the DeepSpeed config whose ZeRO stage decides, as in the project's examples/train_full
    (https://github.com/hiyouga/LLaMA-Factory, examples/README.md, read 2026-11-29). A config that
    names none runs torchrun's DDP (NEXT: PyTorch's steps decide), and so do training arguments on the
    command line; with neither to read (the YAML outside the checkout, or given at submit time as
    "$@") the strategy is unknown."""
    path = next((a for a in launch.args if a.endswith((".yaml", ".yml"))), None)
    config = read_config(path, launch.shell) if path else None
    if not isinstance(config, dict):
        return NEXT if any(a.startswith("--") for a in launch.args) else None
    ds_path = config.get("deepspeed")
    if not isinstance(ds_path, str):
        return NEXT
    found = deepspeed_strategy(ds_path, read_config(ds_path, launch.shell))
    return None if found is NEXT else found


def _accelerate_strategy(acc: Optional[dict], acc_path: Optional[str], acc_cfg: Optional[dict], resolve):
    if acc is None:
        return NEXT
    if "use_fsdp" in acc or any(k.startswith("fsdp_") for k in acc):
        return "fsdp"
    if "zero_stage" in acc:
        return zero_from(resolve(last(acc, "zero_stage")))
    if acc_cfg:
        return _accelerate_config(acc_cfg)
    return strategy_word(Path(acc_path).stem) if acc_path else NEXT  # unreadable: only its name can say


def _accelerate_default(acc: Optional[dict], acc_path: Optional[str]):
    """`accelerate launch` alone: the user's default accelerate config decides (unknown here)."""
    if acc is not None and not acc_path and not {"multi_gpu", "num_processes", "num_machines"} & set(acc):
        return None
    return NEXT


def _accelerate_config(cfg: dict):
    kind = str(cfg.get("distributed_type", "")).upper()
    if kind == "FSDP":
        return "fsdp"
    stage = (cfg.get("deepspeed_config") or {}).get("zero_stage")
    return zero_from(stage) if kind == "DEEPSPEED" and stage is not None else NEXT
