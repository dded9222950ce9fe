"""A rank's device binding in a port: carried in the target's form, or named in the header.

A source that binds each rank to one device (JobIntent.device_binding: `srun --gpus-per-task=1`,
an affinity wrapper, `jsrun -g 1`, `CUDA_VISIBLE_DEVICES=$SLURM_LOCALID`) runs a program that may
never pick its device (`cuda:0`): its port binds each rank too. Where the target's own per-device
launch binds already (ClusterProfile.rank_binding: Frontier's srun, Flux's gpu-affinity=per-task),
that is the binding; elsewhere each rank's visibility variable is set to its own device from its
local index, the form the centers' own affinity wrappers take, in the profile's device order: ALCF's
set_affinity_gpu_polaris.sh sets CUDA_VISIBLE_DEVICES=$((3 - PMI_LOCAL_RANK % 4)) (polaris.yaml's
device_order source, read 2026-11-25; restated in radical-cybertools/radical.pilot
docs/source/supported/polaris.rst, read 2026-11-29); LUMI's select_gpu sets ROCR_VISIBLE_DEVICES from
SLURM_LOCALID (https://docs.lumi-supercomputer.eu/runjobs/scheduled-jobs/distribution-binding/, page
found 2026-11-29, its example not re-read: unconfirmed). A bound rank sees its device as device 0,
so LOCAL_RANK is 0 there (as on Frontier). A port whose launcher forks the workers per node
(torchrun, accelerate, deepspeed) cannot bind each worker: its header says so. The reverse, a
source whose ranks see the node's devices ported where the launch binds, is said too.
The trace gate compares the devices a rank sees (trace/compare.py); these notes name a change
for it with "sees" and "devices".
"""

from typing import Optional

from .intent import JobIntent
from .library import TemplateMeta
from .profiles import ClusterProfile

PER_DEVICE_SHAPES = ("ranks", "generic")


def binds_ranks(intent: JobIntent, profile: ClusterProfile, template: TemplateMeta) -> bool:
    """Whether the port's launch line itself binds each rank to one device (the source did, the
    target's launcher does not, and the port starts one rank per device)."""
    return bool(intent.device_binding) and not profile.rank_binding and template.shape in PER_DEVICE_SHAPES and \
        profile.devices_per_node > 1  # a node of one device has nothing to bind


def binding_notes(intent: JobIntent, profile: ClusterProfile, template: TemplateMeta, gpus_per_node: int) -> list[str]:
    """The header's word on how the port's ranks see their devices, where it is not the obvious."""
    note = (_carried(intent, profile, template, gpus_per_node) if intent.device_binding
            else _bound_here(intent, profile, template))
    return [note] if note else []


def _carried(intent: JobIntent, profile: ClusterProfile, template: TemplateMeta, gpus_per_node: int) -> Optional[str]:
    if profile.devices_per_node == 1:
        return None  # a node of one device: nothing to bind
    source = f"the source binds each rank to one device ({intent.device_binding})"
    if template.shape in PER_DEVICE_SHAPES:
        how = (f"{profile.display_name}'s launch binds it ({profile.rank_binding})" if profile.rank_binding else
               f"the port sets {profile.visible_devices} to the rank's own device from its local index (the form of "
               "the centers' affinity wrappers)")
        return f"{source}; each rank of the port sees one device too: {how}, so LOCAL_RANK is 0"
    if template.shape == "single" or gpus_per_node == 1:
        return None  # one process, or one device a node: nothing to share
    return (f"{source}; the port's {template.launcher} starts {gpus_per_node} workers per node and each worker sees "
            f"all {gpus_per_node} of the node's devices: a program that uses the default device (cuda:0, .cuda()) "
            "rather than picking it from LOCAL_RANK puts every worker on device 0 - pick it from LOCAL_RANK, or port "
            "the job with its own launch line (--entrypoint)")


def _bound_here(intent: JobIntent, profile: ClusterProfile, template: TemplateMeta) -> Optional[str]:
    """The source's ranks see the node's devices; the target's launch shows each rank only its own."""
    several = intent.gpus_per_node != 1 and intent.processes() != 1 and intent.strategy != "single"
    if not (profile.rank_binding and template.shape in PER_DEVICE_SHAPES and several):
        return None
    return (f"each rank of the port sees only its own device ({profile.display_name}'s launch binds it: "
            f"{profile.rank_binding}), as device 0, and LOCAL_RANK is 0; the source's ranks each see all of their "
            "node's devices: a program that picks its device from another launcher's local rank (SLURM_LOCALID, "
            "PMI_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK) must use LOCAL_RANK or device 0 here")
