"""Memory per device of a training job on a target, with the published formulas (templates/
estimates/memory.yaml: the ZeRO paper's and DeepSpeed's accounting of model states, Korthikanti et
al.'s activations per layer), compared with the target device's memory. A port that will not fit
says so in its header with the smallest change that makes it fit; see docs/memory-and-walltime.md.
"""

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Optional

from ..data_cache import load_yaml
from ..paths import templates_dir
from ..profiles import ClusterProfile
from .inputs import Architecture, Workload

GIB = 2 ** 30
# Of a device's memory, what tensors may use: the CUDA/ROCm context, the allocator's fragmentation
# and communication buffers take the rest (a rule of thumb, not a measured figure).
USABLE = 0.9
_STAGES = ("ddp", "zero1", "zero2", "zero3")


@lru_cache(maxsize=1)
def _table() -> dict:
    return load_yaml(templates_dir() / "estimates" / "memory.yaml")


def model_state_bytes(params: float, *, mixed: bool, strategy: str, data_parallel: int,
                      rules: str = "zero_paper", largest_layer: float = 0) -> float:
    """Weights, gradients and Adam states on one device: each part whole, or divided among the
    data-parallel ranks where `strategy` shards it; plus the layer ZeRO-3/FSDP gathers whole."""
    rule = _table()["rules"][rules]
    sharded = rule["sharded"][strategy]
    parts = rule["bytes"]["mixed" if mixed else "fp32"]
    layerwise = rule.get("layerwise", {}).get(strategy, [])
    states = sum(size * params / (data_parallel if part in sharded else 1)
                 for part, size in parts.items() if part not in layerwise)
    return states + rule.get("gathered_layer_bytes", {}).get(strategy, 0) * largest_layer


def activation_bytes(model: Architecture, micro_batch: int, seq: int, *, tensor: int = 1,
                     checkpointing: str = "none", flash: bool = False, mixed: bool = True) -> float:
    """Activations one device keeps for the backward pass (Korthikanti et al. 2022, §4): L layers of
    s*b*h*(34 + 5as/h) bytes, the attention term gone with flash attention or selective
    recomputation; with full recomputation each layer's input plus one layer recomputed at a time."""
    k = _table()["activations"]["per_layer"]
    sbh = seq * micro_batch * model.hidden
    kept = k["kept"] if tensor == 1 else k["parallel_kept"] + k["parallel_split"] / tensor
    attention = 0 if flash or checkpointing == "selective" else k["attention"] * model.heads * seq / model.hidden / tensor
    layer = sbh * (kept + attention)
    total = model.layers * k["recomputed"] * sbh + layer if checkpointing == "full" else model.layers * layer
    return total * (1 if mixed else 2)  # the paper counts 16-bit activations; fp32 ones are twice that


@dataclass(frozen=True)
class Plan:
    """One way to run the job: what the estimate varies when it looks for a change that fits."""

    strategy: str  # ddp | zero1 | zero2 | zero3 | fsdp
    rules: str  # zero_paper | deepspeed
    ranks: int  # all ranks of the job
    micro_batch: Optional[int]
    checkpointing: str


def _strategy(intent_strategy: Optional[str], zero_stage: Optional[int]) -> str:
    if intent_strategy in ("zero1", "zero2", "zero3", "fsdp"):
        return intent_strategy
    return _STAGES[zero_stage] if zero_stage else "ddp"


def per_device(work: Workload, plan: Plan) -> tuple[float, Optional[float]]:
    """(model-state bytes, activation bytes or None when the micro-batch or sequence is unknown)."""
    model_parallel = work.tensor * work.pipeline
    params = work.model.params() / model_parallel
    states = model_state_bytes(params, mixed=work.mixed, strategy=plan.strategy, rules=plan.rules,
                               data_parallel=max(1, plan.ranks // model_parallel),
                               largest_layer=work.model.largest_layer() / work.tensor)
    if plan.micro_batch is None or work.seq is None:
        return states, None
    return states, activation_bytes(work.model, plan.micro_batch, work.seq, tensor=work.tensor,
                                    checkpointing=plan.checkpointing, flash=work.flash, mixed=work.mixed)


def _fits(work: Workload, plan: Plan, limit: float) -> bool:
    return sum(part or 0 for part in per_device(work, plan)) <= limit


def _shard(plan: Plan) -> list[tuple[Plan, str]]:
    """The sharding steps after the plan's own: the next ZeRO stages under DeepSpeed, else FSDP."""
    if plan.rules == "deepspeed":
        later = _STAGES[_STAGES.index(plan.strategy) + 1:] if plan.strategy in _STAGES else ()
        return [(replace(plan, strategy=stage), f"ZeRO stage {stage[-1]} in the DeepSpeed config") for stage in later]
    if plan.strategy in ("zero3", "fsdp"):
        return []
    return [(replace(plan, strategy="fsdp"), "FSDP with full sharding (ZeRO-3's partitioning)")]


def _steps(work: Workload, plan: Plan, profile: ClusterProfile, nodes: int) -> dict[str, list[tuple[Plan, str]]]:
    """Each kind of change, its alternatives from the least to the most: a smaller micro-batch,
    activation checkpointing, more sharding, more nodes (sharded states shrink with the ranks)."""
    steps = {"micro-batch": [(replace(plan, micro_batch=m), f"micro-batch {m} (raise gradient accumulation to keep "
                                                             "the global batch)")
                             for m in range((plan.micro_batch or 1) - 1, 0, -1)],
             "checkpointing": [(replace(plan, checkpointing="full"), "activation checkpointing (full recomputation)")]
             if plan.micro_batch and plan.checkpointing != "full" else [],
             "sharding": _shard(plan), "nodes": []}
    if plan.strategy != "ddp":
        most = max(queue.max_nodes for queue in profile.queues)
        per_node = plan.ranks // nodes
        steps["nodes"] = [(replace(plan, ranks=n * per_node), f"{n} nodes") for n in range(nodes + 1, most + 1)]
    return steps


def smallest_change(work: Workload, plan: Plan, profile: ClusterProfile, nodes: int) -> Optional[str]:
    """One change that makes the job fit, the least first; else the fewest combined (checkpointing,
    then sharding, then the micro-batch, then nodes, each at its strongest until one fits); None
    when even all of them together do not fit."""
    limit = USABLE * profile.gpu_memory_gb * GIB
    steps = _steps(work, plan, profile, nodes)
    single = (what for options in steps.values() for candidate, what in options if _fits(work, candidate, limit))
    if (what := next(single, None)):
        return what
    made = []
    for kind in ("checkpointing", "sharding", "micro-batch", "nodes"):
        options = _steps(work, plan, profile, nodes)[kind]
        fitting = next(((candidate, what) for candidate, what in options if _fits(work, candidate, limit)), None)
        if fitting:
            return ", ".join([*made, fitting[1]])
        if options:
            plan, what = options[-1]
            made.append(what)
    return None


def _describe(work: Workload, plan: Plan) -> str:
    precision = work.precision or "mixed precision (assumed: the job does not say)"
    how = {"ddp": "replicated (DDP)", "fsdp": "sharded by FSDP"}.get(plan.strategy, f"ZeRO stage {plan.strategy[-1]}")
    return (f"{work.model.params() / 1e9:.2f}B parameters from {work.model_from}, Adam, {precision}, "
            f"{how} over {plan.ranks} ranks" + (f", tensor x pipeline {work.tensor} x {work.pipeline}"
                                                  if work.tensor * work.pipeline > 1 else ""))


def memory_notes(work: Workload, intent_strategy: Optional[str], framework: str, profile: ClusterProfile,
                 nodes: int, ranks: int) -> list[str]:
    """The header's word on memory: the estimate and whether it fits, the change that makes it fit,
    or what the estimate would need; nothing when the job gives none of the inputs."""
    if work.model is None:  # said only of a job that looks like a transformer's (a model named, a sequence length)
        return [f"memory not estimated: it needs {'; '.join(work.missing)}"] if work.model_named or work.seq else []
    rules = "deepspeed" if framework == "deepspeed" or work.zero_stage is not None else "zero_paper"
    plan = Plan(_strategy(intent_strategy, work.zero_stage), rules, ranks, work.micro_batch, work.checkpointing)
    if plan.rules == "deepspeed" and plan.strategy == "fsdp":
        plan = replace(plan, rules="zero_paper")
    states, activations = per_device(work, plan)
    total = states + (activations or 0)
    device = profile.gpu_memory_gb
    parts = f"model states {states / GIB:.1f}" + (f" + activations {activations / GIB:.1f}" if activations is not None else "")
    head = f"memory per device: about {total / GIB:.1f} GiB ({parts}; {_describe(work, plan)}) of {device} GiB"
    unknown = f"; activations not estimated: it needs {' and '.join(work.missing)}" if activations is None else ""
    if total <= USABLE * device * GIB:
        return [f"{head}: fits{unknown}"]
    change = smallest_change(work, plan, profile, nodes)
    advice = (f"the smallest change that fits: {change}" if change else
              "even checkpointing, full sharding, micro-batch 1 and the most nodes a queue takes do not fit: "
              "use a cluster with more memory per device, or tensor/pipeline parallelism")
    return [f"{head}: will NOT fit ({int(USABLE * 100)} % of it usable); {advice}{unknown}"]
