"""The slurm verification backend: sbatch a generated script with a mini-app in place of its
training program, wait for the job, and report what Slurm and the mini-app said.

Runs wherever `sbatch` reaches a Slurm controller: a login node (self-hosted runner) or the local
test cluster (tests/cluster/). There is no accounting database on the test cluster, so the job is
followed with `scontrol show job` (its record stays MinJobAge seconds after the end) and its output
file is read directly.
"""

import math
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Mapping, Optional, Sequence

from ..errors import MapleError
from ..miniapp_result import parse_result
from ..schedulers import Option
from ..schedulers.slurm import SLURM
from .cancel import cancellable, wait
from .jobenv import job_environment
from .substitute import VerifyResult, describe, logical_line_start, passed, prepared_script, resolve_miniapp

FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                "PREEMPTED", "BOOT_FAIL", "DEADLINE"}
POLL_SECONDS = 2
# How long sbatch/scontrol may take to answer before the controller counts as unreachable.
COMMAND_TIMEOUT = 60


# Directives that name things of one site (the unit's site_options: account, partition, QOS, node
# feature, license, reservation, walltime): a machine that verifies someone else's script has none of
# them. Adaptation drops them, so the job lands in the local default partition, and the walltime
# becomes the verification timeout (a mini-app needs seconds, not the training run's hours).
# GPU requests are fitted to the local nodes only when asked (max_gpus_per_node).
GPU_REQUESTS = frozenset({"gpus_per_node", "gpus", "gres"})
BACKEND = SLURM.verify_backend


def _fitted_gpus(name: str, value: str, max_gpus_per_node: int) -> Optional[str]:
    """The GPU request fitted to nodes with max_gpus_per_node GPUs, or None if it fits as written.
    A type (v100-32:16, gpu:a100:4) names the site's hardware and is dropped; a count above the
    local node's is capped (a total for the job is at least the count per node, so the cap holds)."""
    if name == "gres":
        gpu = next((g for g in value.split(",") if g.split(":")[0] == "gpu"), None)
        if gpu is None:
            return None
        fields = gpu.split(":")[1:]
    else:
        fields = value.split(":")
    count = int(fields[-1]) if fields and fields[-1].isdigit() else 1
    if len(fields) <= 1 and count <= max_gpus_per_node:
        return None
    return f"--gpus-per-node={min(count, max_gpus_per_node)}"


def adapt_directives(script: str, max_gpus_per_node: Optional[int] = None) -> tuple[str, list[str]]:
    """The script without its site options in #SBATCH lines, and a note for each one dropped.
    With max_gpus_per_node, GPU requests are also fitted to nodes with that many GPUs (_fitted_gpus).
    Only the directive block is read, as Slurm reads it: up to the first command."""
    notes = []

    def keep(option: Option):
        if option.name in SLURM.site_options:
            notes.append(f"dropped site directive {' '.join(option.words)}")
            return None
        fits = max_gpus_per_node is None or option.name not in GPU_REQUESTS or not option.value
        fitted = None if fits else _fitted_gpus(option.name, option.value, max_gpus_per_node)
        if fitted:
            notes.append(f"GPU request {' '.join(option.words)} fitted to this cluster's {max_gpus_per_node}-GPU "
                         f"nodes: {fitted}")
            return [fitted]
        return option

    try:
        return SLURM.rewrite(script, keep)[0], notes
    except MapleError:  # a directive line shlex cannot read: left as written, for sbatch to judge
        return script, []


def _job_fields(job_id: str, env: Mapping[str, str]) -> Optional[dict[str, str]]:
    """`scontrol show job` as a dict, or None once the record is gone."""
    shown = subprocess.run(["scontrol", "show", "job", "--oneliner", job_id], capture_output=True,
                           text=True, env=env, timeout=COMMAND_TIMEOUT)
    if shown.returncode != 0:
        return None
    return dict(field.split("=", 1) for field in shown.stdout.split() if "=" in field)


def _wait(job_id: str, deadline: float, env: Mapping[str, str]) -> dict[str, str]:
    """The job's fields when it reached a final state or the deadline passed, whichever first.
    JobState is UNKNOWN if the record is gone before a final state was seen (it expired after
    MinJobAge, or the controller could not be asked): then the output file is all there is."""
    while True:
        fields = _job_fields(job_id, env)
        if fields is None:
            return {"JobState": "UNKNOWN"}
        if fields.get("JobState") in FINAL_STATES or time.monotonic() >= deadline:
            return fields
        wait(POLL_SECONDS)


def _scancel(job_id: str, env: Mapping[str, str]) -> None:
    subprocess.run([*SLURM.cancel, job_id], env=env, capture_output=True, timeout=COMMAND_TIMEOUT)


def _label_srun_launches(script: str, miniapp: Path) -> str:
    """The script with `SLURM_LABELIO=1` (srun's --label, as an environment variable so the user's
    options stay as written) in front of each srun launch line that runs the mini-app: every task's
    output then starts with its task id, "0: ". Only the launch line: labels in a `$(srun ...)`
    capture elsewhere would corrupt the value. Under srun-torchrun a task is a node's launcher, so
    the label is the node's, not the rank's."""
    starts = {logical_line_start(script, m.start()) for m in re.finditer(re.escape(str(miniapp)), script)}
    for start in sorted(starts, reverse=True):
        indent = len(script[start:]) - len(script[start:].lstrip(" \t"))
        if script.startswith("srun ", start + indent):
            script = script[: start + indent] + "SLURM_LABELIO=1 " + script[start + indent :]
    return script


def verify_slurm(script_path: Path, *, miniapp: Optional[str], timeout: int = 300, adapt: bool = True,
                 entrypoint: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                 workdir: Optional[Path] = None, max_gpus_per_node: Optional[int] = None,
                 submit_options: Sequence[str] = ()) -> VerifyResult:
    """Run `miniapp` through the Slurm script at script_path and report the outcome. Every call
    submits the file's current text as a new job (the debug loop verifies each patch afresh).

    adapt: drop site directives (the Slurm unit's site_options) so another site's script runs here; with
    adapt=False the script is submitted as written and Slurm's own rejection is the answer.
    max_gpus_per_node (with adapt): fit GPU requests to nodes with this many GPUs, for a script
    written for bigger nodes than this cluster's; its ranks then share devices, which only works
    for a CPU mini-app (the test cluster), not under NCCL.
    submit_options: sbatch options given at submit time, as a user would (`sbatch -N 4 job.sh`);
    they win over the script's #SBATCH lines.
    env: what the environment of sbatch (so of the job, which inherits it) is taken from;
    os.environ by default, less anything job_environment drops (tokens and keys).
    workdir: where sbatch runs (the job's SLURM_SUBMIT_DIR) and the job output is written; it must
    be visible from the compute nodes. Defaults to the current directory, as for a user.
    A job still pending or running after `timeout` seconds is cancelled and reported as TIMEOUT.

    The log is sbatch's stderr and the job's output, srun launch lines labelled per task; when the
    job did not complete it ends with `JobState=<state> Reason=<reason>` from Slurm, and after a
    cancellation at the timeout with a `maple-ci: verification timeout ...` line.
    """
    env = job_environment(os.environ if env is None else env)
    if not shutil.which(SLURM.submit[0], path=env.get("PATH")):
        raise MapleError("sbatch not found on PATH: the slurm backend runs on a Slurm login node "
                         "(or the local test cluster, tests/cluster/setup.sh)")
    script, notes, options = _prepared(Path(script_path), miniapp, entrypoint, timeout if adapt else None,
                                       max_gpus_per_node)
    with tempfile.TemporaryDirectory(dir=workdir or Path.cwd(), prefix=".maple-verify-") as scratch:
        job_script = Path(scratch) / Path(script_path).name
        job_script.write_text(script)
        output = Path(scratch) / "job-%j.out"
        # Command-line options win over #SBATCH lines: stdout and stderr of the job come here.
        command = [*SLURM.submit, "--parsable", f"--output={output}", f"--error={output}", *submit_options, *options,
                   str(job_script)]
        submitted = _submit(command, env, workdir)
        if submitted.returncode != 0:
            return VerifyResult(ok=False, backend=BACKEND, state="REJECTED", exit_code=submitted.returncode,
                                log=submitted.stderr, notes=notes,
                                message=f"Slurm rejected the script: {submitted.stderr.strip()}")
        job_id = submitted.stdout.strip().split(";")[0]  # "id" or "id;cluster"
        fields, ended = _follow(job_id, timeout, env)
        output_file = Path(str(output).replace("%j", job_id))
        # sbatch's warnings (accepted, but e.g. about a directive) belong with the job's output.
        log = submitted.stderr + (output_file.read_text(errors="replace") if output_file.exists() else "")
    return _outcome(job_id, fields, ended, log, timeout, notes, program=miniapp is None)


def _prepared(script_path: Path, miniapp: Optional[str], entrypoint: Optional[str], adapt_timeout: Optional[int],
              max_gpus_per_node: Optional[int]) -> tuple[str, list[str], list[str]]:
    """The job script with the mini-app in place (adapted when adapt_timeout, the verification
    timeout, is given), the notes that say so, and the sbatch options that go with it."""
    script, what_runs = prepared_script(script_path.read_text(), miniapp, entrypoint)
    notes = [what_runs]
    if miniapp is not None:  # the program's own launch line is left exactly as written
        script = _label_srun_launches(script, resolve_miniapp(miniapp))
        notes.append("srun launch lines run with SLURM_LABELIO=1")
    if adapt_timeout is None:
        return script, notes, []
    script, adapted = adapt_directives(script, max_gpus_per_node)
    minutes = math.ceil(adapt_timeout / 60)
    return script, notes + adapted + [f"walltime set to {minutes} min (the verification timeout)"], [f"--time={minutes}"]


def _submit(command: list[str], env: Mapping[str, str], workdir: Optional[Path]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, capture_output=True, text=True, env=env, cwd=workdir, timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise MapleError(f"sbatch did not answer within {COMMAND_TIMEOUT} s: is slurmctld up?") from exc


def _follow(job_id: str, timeout: int, env: Mapping[str, str]) -> tuple[dict, dict]:
    """The job's fields at its end or the timeout, and at its end after a cancellation there."""
    with cancellable(lambda: _scancel(job_id, env)):
        fields = _wait(job_id, time.monotonic() + timeout, env)
    if fields["JobState"] in FINAL_STATES | {"UNKNOWN"}:
        return fields, fields
    _scancel(job_id, env)
    # Let slurmstepd end the tasks and flush the output file before it is read.
    return fields, _wait(job_id, time.monotonic() + 30, env)


_STILL_RUNNING = "; ranks that never finish usually wait for a rendezvous that cannot complete"


def _timeout_message(job_id: str, fields: dict, timeout: int) -> str:
    state = fields["JobState"]
    why = f" (Reason={fields.get('Reason')})" if state == "PENDING" else ""
    return f"job {job_id} was still {state}{why} after the {timeout} s timeout and was cancelled"


def _outcome(job_id: str, fields: dict, ended: dict, log: str, timeout: int, notes: list[str],
             program: bool = False) -> VerifyResult:
    if log and not log.endswith("\n"):
        log += "\n"
    if ended["JobState"] != "COMPLETED":
        log += f"JobState={ended['JobState']} Reason={ended.get('Reason', 'None')}\n"
    state = fields["JobState"]
    exit_code = int(fields["ExitCode"].split(":")[0]) if "ExitCode" in fields else None
    result = parse_result(log)
    if state not in FINAL_STATES | {"UNKNOWN"}:  # still pending or running at the timeout
        message = _timeout_message(job_id, fields, timeout)
        return VerifyResult(ok=False, backend=BACKEND, job_id=job_id, state="TIMEOUT", exit_code=exit_code,
                            result=result, log=log + f"maple-ci: verification timeout: {message}\n",
                            message=message + _STILL_RUNNING * (state == "RUNNING"), notes=notes)
    return VerifyResult(ok=passed(state, exit_code, result, program), backend=BACKEND, job_id=job_id, state=state,
                        exit_code=exit_code, result=result, log=log, notes=notes,
                        message=f"job {job_id} ended {state} (exit {exit_code}); {describe(result, program)}")
