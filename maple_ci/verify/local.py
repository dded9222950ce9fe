"""The local verification backend: an emulation of PBS, not PBS. The batch script (with a mini-app
in place of its training program) runs directly with bash on this machine, with the variables PBS
would set for a job on `nodes_hosts` nodes:

- PBS_NODEFILE lists one line per node. The nodes are loopback addresses 127.0.0.1, 127.0.0.2, ...:
  they resolve everywhere and are distinct hosts to mpiexec (the same name twice would be merged
  into one host), and `head -1 $PBS_NODEFILE` is a MASTER_ADDR every rank reaches.
- PBS_JOBID, PBS_JOBNAME, PBS_O_WORKDIR, PBS_O_HOST, PBS_ENVIRONMENT=PBS_BATCH; like PBS, the
  script starts in the home directory, so one that forgets `cd $PBS_O_WORKDIR` fails here too.
- mpiexec is MPICH's Hydra with HYDRA_LAUNCHER=fork: it reads PBS_NODEFILE and starts every
  "node's" ranks as local processes. Cray PALS flags that Hydra lacks are translated by a wrapper
  placed first on PATH (MPIEXEC_WRAPPER): --depth/-d, --cpu-bind, --gpu-bind, --mem-bind and
  --no-vni are dropped (one machine has nothing to bind), `--env NAME=VALUE` becomes
  `-genv NAME VALUE`; --ppn, -n, --hostfile and --envall Hydra takes as they are.

The #PBS directives are not interpreted: queue, walltime and select limits are the static checks'
business. Slurm scripts are refused: srun cannot be emulated honestly; use the slurm backend.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Mapping, Optional

from ..errors import MapleError
from ..miniapp_result import parse_result
from .substitute import VerifyResult, describe, resolve_miniapp, substitute_entrypoint

MPIEXEC_WRAPPER = r"""#!/bin/bash
# maple-ci local backend (PBS emulation): Cray PALS mpiexec flags -> MPICH Hydra mpiexec.
# Options are translated up to the program; everything from the program on is passed as is.
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --depth|-d|--cpu-bind|--gpu-bind|--mem-bind) shift 2 ;;
        --depth=*|--cpu-bind=*|--gpu-bind=*|--mem-bind=*|--no-vni) shift ;;
        --env=*) pair=${1#--env=}; args+=(-genv "${pair%%=*}" "${pair#*=}"); shift ;;
        --env|-env|-genv)
            if [[ $2 == *=* ]]; then args+=(-genv "${2%%=*}" "${2#*=}"); shift 2
            else args+=("$1" "$2" "$3"); shift 3; fi ;;
        -n|-np|--np|-ppn|--ppn|-f|--hostfile|-hostfile|-hosts|--hosts|-host|--host|-wdir|--wdir|-genvlist|--genvlist|-envlist|--envlist)
            args+=("$1" "$2"); shift 2 ;;
        -*) args+=("$1"); shift ;;
        *) break ;;
    esac
done
exec mpiexec.hydra "${args[@]}" "$@"
"""
EMULATION = "PBS emulation, not PBS: the batch script ran directly with bash on this machine"


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def verify_local(script_path: Path, *, miniapp: str, nodes_hosts: int = 2, timeout: int = 300,
                 entrypoint: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                 workdir: Optional[Path] = None) -> VerifyResult:
    """Run `miniapp` through the PBS (or scheduler-less) script at script_path, emulating a PBS job
    on nodes_hosts nodes (see the module docstring). env: the environment the job starts from
    (os.environ by default); workdir: PBS_O_WORKDIR, the current directory by default. A run
    longer than `timeout` seconds is killed, with every process it started, and reported TIMEOUT."""
    text = Path(script_path).read_text()
    job_env = dict(os.environ if env is None else env)
    if re.search(r"(?m)^#SBATCH\b", text):
        raise MapleError(f"{script_path} is a Slurm script; the local backend emulates PBS only, "
                         "use the slurm backend")
    if re.search(r"\bmpiexec\b", text) and not shutil.which("mpiexec.hydra", path=job_env.get("PATH")):
        raise MapleError("the local backend runs mpiexec lines with MPICH's Hydra (mpiexec.hydra), "
                         "which is not installed: apt-get install mpich")
    script = substitute_entrypoint(text, resolve_miniapp(miniapp), entrypoint)
    workdir = Path(workdir or Path.cwd()).resolve()
    hosts = [f"127.0.0.{i}" for i in range(1, nodes_hosts + 1)]
    notes = [EMULATION, f"mini-app {miniapp} in place of the training program",
             f"PBS_NODEFILE lists {nodes_hosts} loopback hosts: {' '.join(hosts)}",
             "mpiexec is MPICH Hydra with the fork launcher; PALS binding flags dropped, --env translated"]

    with tempfile.TemporaryDirectory(dir=workdir, prefix=".maple-verify-") as scratch:
        scratch = Path(scratch)
        job_id = f"{os.getpid()}.maple-local"
        (scratch / "nodefile").write_text("".join(h + "\n" for h in hosts))
        (scratch / "bin").mkdir()
        wrapper = scratch / "bin" / "mpiexec"
        wrapper.write_text(MPIEXEC_WRAPPER)
        wrapper.chmod(0o755)
        job_script = scratch / Path(script_path).name
        job_script.write_text(script)
        job_env.update(
            PBS_NODEFILE=str(scratch / "nodefile"), PBS_JOBID=job_id, PBS_JOBNAME=Path(script_path).name,
            PBS_O_WORKDIR=str(workdir), PBS_O_HOST=socket.gethostname(), PBS_ENVIRONMENT="PBS_BATCH",
            HYDRA_LAUNCHER="fork", PATH=f"{scratch / 'bin'}:{job_env.get('PATH', os.defpath)}",
        )
        # A session of its own, so that a timeout kills the launcher and every rank it started.
        process = subprocess.Popen(["bash", str(job_script)], cwd=Path.home(), env=job_env, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            log, _ = process.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(process)
            log, _ = process.communicate()
            timed_out = True
        _kill_group(process)  # ranks a finished script left running in the background

    result = parse_result(log)
    if timed_out:
        return VerifyResult(ok=False, backend="local", job_id=job_id, state="TIMEOUT", result=result, log=log,
                            notes=notes, message=f"{EMULATION}; it did not finish within {timeout} s and was killed")
    state = "COMPLETED" if process.returncode == 0 else "FAILED"
    ok = state == "COMPLETED" and bool(result and result.get("ok"))
    return VerifyResult(ok=ok, backend="local", job_id=job_id, state=state, exit_code=process.returncode,
                        result=result, log=log, notes=notes,
                        message=f"{EMULATION}; it ended {state} (exit {process.returncode}); {describe(result)}")
