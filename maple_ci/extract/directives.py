"""A job script's directives as extraction reads them: by the scheduler unit whose directives the
script has (maple_ci.schedulers, the one reader of #SBATCH, #PBS, ... lines), and the job variables
whose values they fix."""

from ..schedulers import Directives, detect, find
from ..schedulers.base import count, per_node, seconds_to_walltime
from ..schedulers.pbs import pbs_walltime
from ..schedulers.slurm import slurm_walltime

__all__ = ["Directives", "count", "parse_directives", "pbs_walltime", "per_node", "runtime_vars",
           "seconds_to_walltime", "slurm_walltime"]


def parse_directives(text: str) -> Directives:
    """What the job asks for, read as its scheduler reads it (up to the first command); MapleError
    for a value the scheduler would refuse."""
    unit = detect(text)
    return unit.read(text) if unit else Directives()


def runtime_vars(d: Directives) -> dict[str, str]:
    """Scheduler variables whose value the directives fix (d.nodes is the job's node count)."""
    unit = find(d.scheduler)
    return unit.known_vars(d) if unit else {}
