"""Programs that run on a Ray cluster (issue 25, E): the job starts Ray's runtime on its nodes and
runs one driver, whose tasks or engine workers Ray places on the nodes' GPUs. Its launcher is "ray":
no launch line starts the ranks, so a port that runs the driver alone starts 1 rank of many.

Sources, read 2026-11-29:
- Ray, "Deploying on Slurm" (https://docs.ray.io/en/latest/cluster/vms/user-guides/community/slurm.html):
  `ray start --head` on the job's first node, `ray start --address=HEAD:PORT` on every other (one srun
  each, `--block &`), then the driver once, on the batch node.
- vLLM, "Parallelism and Scaling" (https://docs.vllm.ai/en/latest/serving/parallelism_scaling/): one
  `vllm serve` on the Ray head drives tensor_parallel_size x pipeline_parallel_size GPU workers; across
  nodes, "set tensor_parallel_size to the number of GPUs per node and pipeline_parallel_size to the
  number of nodes". `--distributed-executor-backend ray` puts the workers on Ray (`mp`: one node).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Optional

from .directives import count
from .frameworks import by_program, runtime_setup

if TYPE_CHECKING:
    from ..intent import JobIntent
    from .directives import Directives
    from .launch import Launch
    from .walk import Shell

# An inference engine's arguments for its (tensor, pipeline) parallel sizes, every spelling: vLLM's
# (vllm serve --help, EngineArgs) and SGLang's ("Server Arguments",
# https://docs.sglang.io/advanced_features/server_arguments.html, read 2026-11-29: --tp, --tp-size,
# --tensor-parallel-size; --pp-size, --pipeline-parallel-size). One engine process drives them all.
ENGINE_SIZES = {"vllm": (("--tensor-parallel-size", "-tp"), ("--pipeline-parallel-size", "-pp")),
                "sglang": (("--tensor-parallel-size", "--tp-size", "--tp"), ("--pipeline-parallel-size", "--pp-size"))}
# Data-parallel replicas, each with its own tensor x pipeline GPUs: vLLM's "Data Parallel Deployment"
# (docs/serving/data_parallel_deployment.md: each DP engine owns TP workers) and SGLang's Server Arguments
# ("--dp 2 --tp 2 uses 4 GPUs in total"), both read 2026-11-29.
ENGINE_REPLICAS = {"vllm": ("--data-parallel-size", "-dp"), "sglang": ("--data-parallel-size", "--dp-size", "--dp")}


def _value(args: list[str], spellings: tuple[str, ...]) -> Optional[str]:
    """The value of the last of `spellings` among `args` (`--x 2` or `--x=2`), else None."""
    found = None
    for i, arg in enumerate(args):
        option, eq, value = arg.partition("=")
        if option in spellings:
            found = value if eq else (args[i + 1] if i + 1 < len(args) else "")
    return found


def engine_sizes(launch: "Launch", framework: str) -> Optional[tuple[int, int]]:
    """(tensor, pipeline) sizes a vLLM or SGLang launch asks for, 1 where it names none; None when
    one is only known at run time."""
    sizes = []
    for spellings in ENGINE_SIZES[framework]:
        value = _value(launch.args, spellings)
        size = 1 if value is None else count(launch.shell.resolve(value))
        if size is None:
            return None
        sizes.append(size)
    return sizes[0], sizes[1]


def engine_devices(launch: "Launch", framework: str) -> Optional[int]:
    """The GPUs an engine's one server drives: data-parallel replicas x tensor x pipeline size."""
    sizes = engine_sizes(launch, framework)
    replicas = _value(launch.args, ENGINE_REPLICAS[framework])
    replicas = 1 if replicas is None else count(launch.shell.resolve(replicas))
    return sizes[0] * sizes[1] * replicas if sizes and replicas else None


def server_intent(intent: "JobIntent", launch: Optional["Launch"], d: "Directives") -> "JobIntent":
    """An engine's server started once on one node (JobIntent.engine_server): its world is the GPUs
    its size flags name, on the node's GPUs where the directives give none."""
    if launch is None or intent.world_size != 1 or not intent.engine_server():
        return intent
    devices = engine_devices(launch, intent.framework)
    if devices is None:
        return intent
    return replace(intent, world_size=devices, gpus_per_node=d.gpus_per_node or devices)


def engine_strategy(launch: "Launch", framework: str) -> Optional[str]:
    """An engine's model parallelism in the strategy vocabulary: tp, pp, tp+pp, or single for one GPU."""
    sizes = engine_sizes(launch, framework)
    if sizes is None:
        return None
    tp, pp = sizes
    return {(False, False): "single", (True, False): "tp", (False, True): "pp", (True, True): "tp+pp"}[(tp > 1, pp > 1)]


def ray_starts(shell: "Shell") -> list[tuple[int, list[str]]]:
    """(line, words) of every `ray start` the job runs, in the script or a script it runs."""
    return [(line, words) for line, words, found in [*shell.commands, *shell.inner]
            if found and runtime_setup(found.entry, found.args) and found.args[:1] == ["start"]]


def on_ray(launch: "Launch", shell: "Shell") -> bool:
    """Whether the program runs on a Ray cluster: the job starts one, or the program is vLLM told to
    place its workers with Ray."""
    backend = _value(launch.args, ("--distributed-executor-backend",))
    return bool(ray_starts(shell)) or by_program(launch.entry) == "vllm" and backend == "ray"


def ray_intent(intent: "JobIntent", launch: Optional["Launch"], shell: "Shell", d: "Directives") -> "JobIntent":
    """The intent of a program on a Ray cluster: launcher ray; a vLLM engine's world is its tensor x
    pipeline size, over the directives' nodes (else pipeline-size nodes, vLLM's layout); any other
    driver's tasks are its own choice: its GPUs per node are those each `ray start` offers (else the
    directives', which Ray detects), its world the cluster's GPUs (JobIntent's nodes x GPUs rule)."""
    if launch is None or not on_ray(launch, shell):
        return intent
    sizes = engine_sizes(launch, intent.framework) if intent.framework in ENGINE_SIZES else None
    given_nodes = d.nodes if d.nodes_given else None
    if sizes:
        world = engine_devices(launch, intent.framework) or sizes[0] * sizes[1]
        nodes = given_nodes or sizes[1]
        per_node = world // nodes if world % nodes == 0 else None
    else:
        world, nodes, per_node = None, given_nodes or intent.nodes, _offered_gpus(shell) or d.gpus_per_node
    return replace(intent, launcher="ray", nodes=nodes, gpus_per_node=per_node, world_size=world)


def _offered_gpus(shell: "Shell") -> Optional[int]:
    """The GPUs each node's `ray start --num-gpus N` offers, when every start names the same number."""
    offered = {count(shell.resolve(_value(words, ("--num-gpus",)) or "")) for _, words in ray_starts(shell)}
    return offered.pop() if len(offered) == 1 and None not in offered else None
