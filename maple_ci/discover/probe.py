"""The read-only queries `maple cluster discover` runs on a login node, and their recorded outputs.

Each query is a fixed argv from QUERIES: no shell, no argument from the user but the user's own
name (sacctmgr's `user=`), a timeout, and its output returned as text. A query that is not there
(the command is missing, fails, or times out) answers None and its facts are written unconfirmed.
Recorded(folder) answers the same queries from files, for tests and for a login node's outputs
copied elsewhere: <key>.txt holds what `QUERIES[key]` printed.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
from pathlib import Path
from typing import Optional

TIMEOUT_S = 30  # sacctmgr and `module spider` can be slow on a busy login node; none runs longer
# Lmod (its command, as `module` runs it) prints listings on stderr and shell code for bash on stdout.
LMOD = "$LMOD_CMD"
QUERIES: dict[str, tuple[str, ...]] = {
    "slurm_config": ("scontrol", "show", "config"),
    "slurm_partitions": ("scontrol", "show", "partition", "--oneliner"),
    "slurm_nodes": ("scontrol", "show", "node", "--oneliner"),
    "slurm_assoc": ("sacctmgr", "--noheader", "--parsable2", "show", "assoc", "user={user}", "format=Account,Partition,QOS"),
    "slurm_qos": ("sacctmgr", "--noheader", "--parsable2", "show", "qos", "format=Name,MaxWall,MaxTRES"),
    "slurm_mpi": ("srun", "--mpi=list"),
    "pbs_queues": ("qstat", "-Qf"),
    "pbs_server": ("qstat", "-Bf"),
    "pbs_nodes": ("pbsnodes", "-a"),
    "flux_resources": ("flux", "resource", "list"),
    "flux_queues": ("flux", "queue", "list"),
    "lsf_queues": ("bqueues", "-l"),
    "lsf_hosts": ("bhosts", "-w"),
    "lsf_gpus": ("lshosts", "-gpu", "-w"),
    "modules": (LMOD, "bash", "--terse", "avail"),
    "nvidia_gpus": ("nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"),
    "nvidia_topo": ("nvidia-smi", "topo", "-m"),
    "rocm_topo": ("rocm-smi", "--showtopo"),
    "interfaces": ("ls", "/sys/class/net"),
    "arch": ("uname", "-m"),
}
# A container runtime is found by its command on PATH (`command -v NAME`), not by running it.
RUNTIMES = ("apptainer", "singularity", "podman-hpc", "shifter", "enroot")


def command_line(key: str) -> str:
    """How a fact's comment names its query: the argv as a person would type it."""
    words = ["module" if word == LMOD else word for word in QUERIES[key] if word != "bash"]
    return " ".join(word.replace("{user}", "$USER") for word in words)


class Live:
    """The queries run here, on this machine."""

    def __init__(self, env: Optional[dict] = None):
        self.env = dict(os.environ if env is None else env)

    def __call__(self, key: str) -> Optional[str]:
        argv = [self._word(word) for word in QUERIES[key]]
        if not argv[0] or not shutil.which(argv[0], path=self.env.get("PATH")):
            return None
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, env=self.env,
                                  stdin=subprocess.DEVNULL, errors="replace")
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode != 0:
            return None
        return done.stderr if argv[0] == self.env.get("LMOD_CMD") else done.stdout

    def which(self, name: str) -> bool:
        return shutil.which(name, path=self.env.get("PATH")) is not None

    def _word(self, word: str) -> str:
        if word == LMOD:
            return self.env.get("LMOD_CMD", "")
        return word.replace("{user}", getpass.getuser())


class Recorded:
    """The queries' outputs as recorded in a folder: <key>.txt each, and runtimes.txt naming the
    container runtimes found on PATH. A file that is not there is a query that answered nothing."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def __call__(self, key: str) -> Optional[str]:
        if key not in QUERIES:
            raise KeyError(key)
        path = self.folder / f"{key}.txt"
        return path.read_text() if path.is_file() else None

    def which(self, name: str) -> bool:
        path = self.folder / "runtimes.txt"
        return path.is_file() and name in path.read_text().split()
