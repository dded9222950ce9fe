"""Walltime on the target: the source's walltime scaled by the two devices' peak dense throughput
in the job's precision (templates/estimates/gpus.yaml, each figure with its vendor source) and by
the change in device count. A first-order guide: it assumes the job reaches the same fraction of
peak on both and scales perfectly; docs/memory-and-walltime.md says how far to trust it.
"""

import math
from functools import lru_cache
from typing import Optional

from ..data_cache import load_yaml
from ..errors import MapleError
from ..paths import templates_dir
from ..profiles import ClusterProfile, Queue, get_profile, walltime_seconds


@lru_cache(maxsize=1)
def gpu_table() -> list[dict]:
    return load_yaml(templates_dir() / "estimates" / "gpus.yaml")["gpus"]


def gpu(model: str) -> Optional[dict]:
    """The table's entry for a profile's gpu_model, or None when it has none."""
    return next((entry for entry in gpu_table() if model in entry["models"]), None)


def peak_tflops(entry: dict, precision: Optional[str]) -> tuple[float, str]:
    """(TFLOPS, the precision they are for): the job's, bf16 when it does not say, the device's
    fp32 figure where it has no unit for that precision (a V100 running bf16)."""
    wanted = precision or "bf16"
    value = entry["tflops"].get(wanted)
    return (value, wanted) if value else (entry["tflops"]["fp32"], "fp32")


def hhmmss(seconds: float) -> str:
    """Whole minutes, rounded up: an estimate asks for a little more, never less."""
    minutes = math.ceil(seconds / 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def scaled_seconds(seconds: float, source: tuple[int, float], target: tuple[int, float]) -> float:
    """`seconds` on (devices, TFLOPS each) of the source, on the target's: work / throughput."""
    (source_devices, source_peak), (target_devices, target_peak) = source, target
    return seconds * (source_devices * source_peak) / (target_devices * target_peak)


def _source_profile(name: Optional[str]) -> Optional[ClusterProfile]:
    try:
        return get_profile(name) if name else None
    except MapleError:
        return None


def _devices(source_world: Optional[int], source_per_node: int, target: tuple[int, int], by_node: bool
             ) -> tuple[int, int, str]:
    """(source devices, target devices, in what unit): the whole job when both sizes are known,
    else one node (a size chosen at submit time is the same number of nodes on both)."""
    nodes, per_node = target
    if by_node or not source_world:
        return source_per_node, per_node, "per node"
    return source_world, nodes * per_node, "in all"


def _limit_note(estimate: float, walltime: str, queue: Queue, nodes: int) -> str:
    limit = queue.max_walltime_for(nodes)
    if estimate > walltime_seconds(limit):
        jobs = math.ceil(estimate / walltime_seconds(limit))
        return (f"; longer than the {limit} queue {queue.name} allows: checkpoint, and resubmit to go on "
                f"(about {jobs} jobs of {limit})")
    if estimate > walltime_seconds(walltime):
        return f"; longer than the {walltime} the port asks for: give --walltime {hhmmss(estimate)} to ask for it"
    return f"; the port keeps the source's {walltime}"


def walltime_notes(source_cluster: Optional[str], source_walltime: Optional[str], source_world: Optional[int],
                   source_per_node: Optional[int], precision: Optional[str], profile: ClusterProfile,
                   job) -> list[str]:
    """The header's walltime estimate for `job` (synthesize.Job) on `profile`, or what it needs."""
    if not source_walltime or source_cluster == profile.name:
        return []
    source = _source_profile(source_cluster)
    if source is None:  # its GPUs are not known: the source's walltime stands, as without estimates
        return []
    entries = gpu(source.gpu_model), gpu(profile.gpu_model)
    if None in entries:
        unknown = [p.gpu_model for p, e in zip((source, profile), entries) if e is None]
        return [f"walltime not estimated: {', '.join(unknown)} is not in templates/estimates/gpus.yaml"]
    (source_peak, used), (target_peak, target_used) = (peak_tflops(entry, precision) for entry in entries)
    if (source_peak, source.devices_per_node) == (target_peak, profile.devices_per_node) and not job.from_allocation \
            and source_world == job.world_size:
        return []  # the same devices, as many: nothing to scale
    per_device = job.gpus_per_node * job.devices
    src, tgt, unit = _devices(source_world, source_per_node or source.devices_per_node, (job.nodes, per_device),
                              job.from_allocation)
    estimate = scaled_seconds(walltime_seconds(source_walltime), (src, source_peak), (tgt, target_peak))
    said = "" if precision else " (the job does not say its precision: bf16 assumed)"
    return [f"walltime estimate on {profile.name}: {hhmmss(estimate)}, the source's {source_walltime} on {src} "
            f"{source.gpu_model} scaled to {tgt} {profile.gpu_model} ({unit}) by peak dense {used}/{target_used} "
            f"throughput, {source_peak:g} vs {target_peak:g} TFLOPS per device{said}; it assumes the same "
            f"fraction of peak and perfect scaling, so it is a rough guide"
            + _limit_note(estimate, job.walltime, job.queue, job.nodes)]
