"""The local backend (PBS emulation) on a Polaris-form script: PALS mpiexec flags, the profile's own
module lines (real Lmod over the test cluster's stand-in modulefiles) and conda activation."""

import os
import textwrap
from pathlib import Path

import pytest

from maple_ci.errors import MapleError
from maple_ci.profiles import get_profile
from maple_ci.verify.local import verify_local

MINIAPP = str(Path(__file__).parent / "cluster" / "allreduce_miniapp.py")


def polaris_script(launch: str, master_port: int = 29500) -> str:
    setup = get_profile("polaris").setup_for("pytorch")
    environment = [f"module use {d}" for d in setup.module_use] + [f"module load {m}" for m in setup.modules] + setup.setup
    return textwrap.dedent("""\
        #!/bin/bash
        #PBS -l select=2:system=polaris
        #PBS -l place=scatter
        #PBS -l walltime=00:30:00
        #PBS -l filesystems=home:eagle
        #PBS -q debug-scaling
        #PBS -A MyProject
        cd ${{PBS_O_WORKDIR}}
        {environment}
        NNODES=$(wc -l < $PBS_NODEFILE)
        export MASTER_ADDR=$(head -n 1 $PBS_NODEFILE)
        export MASTER_PORT={master_port}
        {launch}
        """).format(environment="\n".join(environment), launch=launch, master_port=master_port)


PALS_LAUNCH = ("mpiexec -n $((NNODES * 4)) --ppn 4 --depth 16 --cpu-bind depth --env OMP_NUM_THREADS=1 "
               "python train.py --epochs 3")


def write(tmp_path: Path, text: str, name: str = "job.pbs") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# The cluster provides what the job environment needs (Lmod, modulefiles, conda stand-in); the
# emulation itself does not use Slurm.
@pytest.mark.cluster
def test_polaris_script_trains_the_ddp_miniapp_on_eight_ranks_of_two_emulated_nodes(slurm_cluster, tmp_path, master_port):
    result = verify_local(write(tmp_path, polaris_script(PALS_LAUNCH, master_port)), miniapp="ddp", timeout=300,
                          env=slurm_cluster.job_env, workdir=tmp_path)
    assert result.ok, result.message + "\n" + result.log
    assert result.state == "COMPLETED" and result.result["ranks_seen"] == list(range(8))
    assert result.message.startswith("PBS emulation, not PBS")


@pytest.mark.cluster
def test_a_failing_launch_line_fails_the_run_with_its_output(slurm_cluster, tmp_path):
    # Hydra refuses an unknown flag exactly as it would any other defect in the launch line.
    script = polaris_script(PALS_LAUNCH.replace("--ppn 4", "--ppn 4 --no-such-flag"))
    result = verify_local(write(tmp_path, script), miniapp=MINIAPP, timeout=60, env=slurm_cluster.job_env, workdir=tmp_path)
    assert not result.ok and result.state == "FAILED" and result.exit_code != 0
    assert "unrecognized argument no-such-flag" in result.log


def test_a_hanging_script_is_killed_at_the_timeout(tmp_path):
    script = "#!/bin/bash\n#PBS -l select=1\nsleep 30 & wait\npython train.py\n"
    result = verify_local(write(tmp_path, script), miniapp=MINIAPP, timeout=2, workdir=tmp_path)
    assert not result.ok and result.state == "TIMEOUT"
    assert "did not finish within 2 s" in result.message


def test_the_job_sees_what_pbs_would_set(tmp_path):
    script = ('#!/bin/bash\necho "dir=$PWD wd=$PBS_O_WORKDIR nodes=$(paste -sd, $PBS_NODEFILE) env=$PBS_ENVIRONMENT"\n'
              "python train.py\n")
    result = verify_local(write(tmp_path, script), miniapp=MINIAPP, nodes_hosts=3, timeout=60, workdir=tmp_path)
    assert f"dir={Path.home()} wd={tmp_path.resolve()} nodes=127.0.0.1,127.0.0.2,127.0.0.3 env=PBS_BATCH" in result.log
    assert result.ok and result.result["world_size"] == 1


def test_slurm_scripts_are_refused(tmp_path):
    with pytest.raises(MapleError, match="Slurm script"):
        verify_local(write(tmp_path, "#!/bin/bash\n#SBATCH -N 2\nsrun python train.py\n"), miniapp=MINIAPP)


def test_in_an_allocation_the_script_runs_as_is_slurm_scripts_too(tmp_path, capsys):
    # As in the center-side CI job: no emulation, the job's own environment, the CI job's directory.
    script = ('#!/bin/bash\n#SBATCH -N 1\necho "dir=$PWD nodefile=${PBS_NODEFILE:-none} job=$SLURM_JOB_ID"\n'
              'python "$SCRATCH/train.py" --epochs 1\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("PBS_")} | {"SLURM_JOB_ID": "4242", "SCRATCH": "/x"}
    result = verify_local(write(tmp_path, script, "job.sbatch"), miniapp=MINIAPP, timeout=60, env=env, workdir=tmp_path,
                          in_allocation=True)
    assert result.ok, result.message + "\n" + result.log
    assert f"dir={tmp_path.resolve()} nodefile=none job=4242" in result.log
    assert result.job_id == "4242" and result.result["world_size"] == 1
    assert result.message.startswith("the batch script ran as is inside this job's allocation")
    # The CI job's trace shows the run (on stderr: stdout may be --json).
    assert "MAPLE_MINIAPP_RESULT" in capsys.readouterr().err
