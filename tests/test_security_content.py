"""What a launch script's content can make a port or a verification do (issue 10, findings 1-3).

A fork controls the source script; the port is committed by the bot and run at a center under a
real account. Each test here is an attack that used to work, now shown failing."""

import re
from pathlib import Path

import pytest

from maple_ci.port import port
from maple_ci.verify.local import verify_local

MINIAPP = str(Path(__file__).parent / "cluster" / "allreduce_miniapp.py")


def _source(tmp_path: Path, marker: Path, body: str = "") -> Path:
    script = tmp_path / "job.sbatch"
    script.write_text(f"""#!/bin/bash
#SBATCH -N 1
#SBATCH --gpus-per-node=4
#SBATCH -t 00:10:00
export BASH_ENV='$(touch {marker})'
export PS4='$(touch {marker}) '
export LD_PRELOAD={tmp_path}/evil.so
export PATH=./bin:$PATH
export PYTHONSTARTUP={tmp_path}/evil.py
export HF_HOME=$SCRATCH/hf
{body}
srun python train.py --epochs 1
""")
    return script


def test_code_running_variables_are_not_carried_into_a_port(tmp_path):
    marker = tmp_path / "marker"
    _, [result] = port(str(_source(tmp_path, marker)), ["polaris"], tmp_path / "out")
    exports = [line for line in result.script.splitlines() if line.startswith("export ")]
    assert not [line for line in exports if line.split()[1].split("=")[0] in
                ("BASH_ENV", "PS4", "LD_PRELOAD", "PATH", "PYTHONSTARTUP")], exports
    assert "export HF_HOME=\"$SCRATCH/hf\"" in exports
    assert "# Note: BASH_ENV, PS4, LD_PRELOAD are not carried over: it makes the shell or the dynamic loader run code" in result.script
    assert "# Note: PATH, PYTHONSTARTUP are not carried over: a port never extends a search path or start-up hook" in result.script


@pytest.mark.cluster
def test_a_ported_script_runs_without_the_sources_bash_env(slurm_cluster, tmp_path, master_port):
    # End to end: the port of the hostile script is run the way the center runs it; the per-rank
    # `bash -c` wrapper and the job shell would both have expanded the carried BASH_ENV.
    marker = tmp_path / "marker"
    _, [result] = port(str(_source(tmp_path, marker)), ["polaris"], tmp_path / "out")
    script = Path(result.path)  # the test cluster's nodes are one machine: a port of its own
    script.write_text(re.sub(r"(?m)^export MASTER_PORT=\d+$", f"export MASTER_PORT={master_port}", result.script))
    run = verify_local(script, miniapp=MINIAPP, timeout=180, env=slurm_cluster.job_env, workdir=tmp_path)
    assert run.ok, run.message + "\n" + run.log
    assert not marker.exists()
