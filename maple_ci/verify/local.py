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
  `-genv NAME VALUE`; --ppn, -n, --hostfile and --envall Hydra takes as they are. Each rank also
  gets the rank ids PALS sets, PALS_RANKID and PALS_LOCAL_RANKID, from Hydra's PMI_RANK and
  MPI_LOCALRANKID: Aurora's launch line reads them.

The #PBS directives are not interpreted: queue, walltime and select limits are the static checks'
business. Slurm scripts are refused: srun cannot be emulated honestly; use the slurm backend.

With in_allocation=True nothing is emulated: the script's body runs as is in the current
environment, which must already be a job's (a Slurm or PBS allocation: the center-side GitLab CI
job, which Jacamar runs inside one), so Slurm scripts are fine there too.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Mapping, Optional, TextIO

from ..errors import MapleError
from ..miniapp_result import parse_result
from .cancel import cancellable
from .jobenv import job_environment
from .substitute import VerifyResult, describe, passed, prepared_script

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
# Cray PALS gives each rank its ids; Hydra gives PMI_RANK and MPI_LOCALRANKID.
exec mpiexec.hydra "${args[@]}" \
    bash -c 'export PALS_RANKID=$PMI_RANK PALS_LOCAL_RANKID=$MPI_LOCALRANKID; exec "$@"' pals-rank "$@"
"""
EMULATION = "PBS emulation, not PBS: the batch script ran directly with bash on this machine"


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _run(job_script: Path, cwd: Path, env: dict, timeout: int, echo: Optional[TextIO]) -> tuple[str, bool, int]:
    """(output, timed out, exit status) of `bash job_script`, its output copied to echo as it comes.
    The job gets a session of its own, so that a timeout kills the launcher and every rank it started."""
    process = subprocess.Popen(["bash", str(job_script)], cwd=cwd, env=env, text=True, errors="replace",
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    lines: list[str] = []

    def pump() -> None:
        for line in process.stdout:
            lines.append(line)
            if echo:
                echo.write(line)
                echo.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        with cancellable(lambda: _kill_group(process)):
            process.wait(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    _kill_group(process)  # at the timeout, or ranks a finished script left running in the background
    process.wait()
    reader.join()  # the pipe closes once every process of the group is gone
    return "".join(lines), timed_out, process.returncode


def _emulate_pbs(scratch: Path, script_name: str, nodes_hosts: int, workdir: Path, job_env: dict) -> list[str]:
    """Set job_env up as PBS would for a job on nodes_hosts nodes (module docstring), with the
    nodefile and the mpiexec wrapper in scratch; the notes that say so."""
    hosts = [f"127.0.0.{i}" for i in range(1, nodes_hosts + 1)]
    (scratch / "nodefile").write_text("".join(h + "\n" for h in hosts))
    (scratch / "bin").mkdir()
    wrapper = scratch / "bin" / "mpiexec"
    wrapper.write_text(MPIEXEC_WRAPPER)
    wrapper.chmod(0o755)
    job_env.update(
        PBS_NODEFILE=str(scratch / "nodefile"), PBS_JOBID=f"{os.getpid()}.maple-local", PBS_JOBNAME=script_name,
        PBS_O_WORKDIR=str(workdir), PBS_O_HOST=socket.gethostname(), PBS_ENVIRONMENT="PBS_BATCH",
        HYDRA_LAUNCHER="fork", PATH=f"{scratch / 'bin'}:{job_env.get('PATH', os.defpath)}",
    )
    return [EMULATION, f"PBS_NODEFILE lists {nodes_hosts} loopback hosts: {' '.join(hosts)}",
            "mpiexec is MPICH Hydra with the fork launcher; PALS binding flags dropped, --env translated, "
            "PALS rank ids set"]


def verify_local(script_path: Path, *, miniapp: Optional[str], nodes_hosts: int = 2, timeout: int = 300,
                 entrypoint: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                 workdir: Optional[Path] = None, in_allocation: bool = False) -> VerifyResult:
    """Run `miniapp` through the PBS (or scheduler-less) script at script_path, emulating a PBS job
    on nodes_hosts nodes (see the module docstring). env: what the job's environment is taken from
    (os.environ by default; job_environment keeps no token or key); workdir: PBS_O_WORKDIR, the
    current directory by default. A run longer than `timeout` seconds is killed, with every
    process it started, and reported TIMEOUT.
    in_allocation: run the script as is, in env and workdir, inside the Slurm or PBS job this
    process already is (no emulation; Slurm scripts accepted)."""
    text = Path(script_path).read_text()
    job_env = job_environment(os.environ if env is None else env)
    if not in_allocation and re.search(r"(?m)^#SBATCH\b", text):
        raise MapleError(f"{script_path} is a Slurm script; the local backend emulates PBS only, "
                         "use the slurm backend (or --in-allocation inside a Slurm job)")
    if not in_allocation and re.search(r"\bmpiexec\b", text) and not shutil.which("mpiexec.hydra", path=job_env.get("PATH")):
        raise MapleError("the local backend runs mpiexec lines with MPICH's Hydra (mpiexec.hydra), "
                         "which is not installed: apt-get install mpich")
    script, what_runs = prepared_script(text, miniapp, entrypoint)
    workdir = Path(workdir or Path.cwd()).resolve()

    with tempfile.TemporaryDirectory(dir=workdir, prefix=".maple-verify-") as scratch:
        scratch = Path(scratch)
        job_script = scratch / Path(script_path).name
        job_script.write_text(script)
        if in_allocation:
            how = "the batch script ran as is inside this job's allocation"
            notes = [how]
            job_id = job_env.get("SLURM_JOB_ID") or job_env.get("PBS_JOBID")
            cwd = workdir  # where the CI job (or the user) runs it, as sbatch/qsub would start it
        else:
            how = EMULATION
            notes = _emulate_pbs(scratch, Path(script_path).name, nodes_hosts, workdir, job_env)
            job_id = job_env["PBS_JOBID"]
            cwd = Path.home()  # like PBS: a script that forgets `cd $PBS_O_WORKDIR` fails here too
        notes.append(what_runs)
        # Inside a CI job the job's trace is where a person (and the jacamar backend) reads the run:
        # its output is also copied to stderr as it comes (stdout may carry --json).
        log, timed_out, returncode = _run(job_script, cwd, job_env, timeout, sys.stderr if in_allocation else None)

    result = parse_result(log)
    if timed_out:
        return VerifyResult(ok=False, backend="local", job_id=job_id, state="TIMEOUT", result=result, log=log,
                            notes=notes, message=f"{how}; it did not finish within {timeout} s and was killed")
    state = "COMPLETED" if returncode == 0 else "FAILED"
    return VerifyResult(ok=passed(state, returncode, result, miniapp is None), backend="local", job_id=job_id,
                        state=state, exit_code=returncode, result=result, log=log, notes=notes,
                        message=f"{how}; it ended {state} (exit {returncode}); {describe(result, miniapp is None)}")
