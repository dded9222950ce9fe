"""The slurm backend on the local two-node test cluster (tests/cluster/), plus the script rewriting it
relies on. Scripts are hand-written in the form sites document (Perlmutter: srun bash -c torchrun;
Delta: srun torchrun with a c10d rendezvous), with the profiles' own module lines."""

import textwrap
from pathlib import Path

import pytest

from maple_ci.errors import MapleError
from maple_ci.profiles import get_profile
from maple_ci.verify.slurm import adapt_directives, verify_slurm
from maple_ci.verify.substitute import substitute_entrypoint

MINIAPP = str(Path(__file__).parent / "cluster" / "allreduce_miniapp.py")
JOB_TIMEOUT = 300  # generous: 8 ranks of a real mini-app share the few cores of a CI machine


def module_lines(cluster: str) -> str:
    setup = get_profile(cluster).setup_for("pytorch")
    return "\n".join([f"module use {d}" for d in setup.module_use] + [f"module load {m}" for m in setup.modules])


def perlmutter_script(node_rank: str = "$SLURM_PROCID") -> str:
    return textwrap.dedent("""\
        #!/bin/bash
        #SBATCH -A m1234_g
        #SBATCH -C gpu
        #SBATCH -q regular
        #SBATCH -t 00:30:00
        #SBATCH -N 2
        #SBATCH --ntasks-per-node=1
        #SBATCH --gpus-per-node=4
        {modules}
        export MASTER_ADDR=$(scontrol show hostnames $SLURM_NODELIST | head -n 1)
        export MASTER_PORT=29500
        srun bash -c 'torchrun --nnodes=$SLURM_JOB_NUM_NODES --nproc_per_node=4 --node_rank={node_rank} \\
            --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT train.py --epochs 10 --lr 3e-4'
        """).format(modules=module_lines("perlmutter"), node_rank=node_rank)


DELTA_SCRIPT = textwrap.dedent("""\
    #!/bin/bash
    #SBATCH --account=bbka-delta-gpu
    #SBATCH --partition=gpuA100x4
    #SBATCH --nodes=2 --ntasks-per-node=1 --gpus-per-node=4
    #SBATCH --time=02:00:00
    {modules}
    conda activate base
    head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
    srun torchrun --nnodes 2 --nproc_per_node 4 --rdzv_id $SLURM_JOB_ID --rdzv_backend c10d \\
        --rdzv_endpoint $head:29500 $SLURM_SUBMIT_DIR/train.py --config gpt2.yaml
    """).format(modules=module_lines("delta"))


def write(tmp_path: Path, text: str, master_port: int = 29500) -> Path:
    path = tmp_path / "job.sbatch"
    path.write_text(text.replace("29500", str(master_port)))
    return path


# --- script rewriting (no cluster) ---

def test_substitution_keeps_launcher_flags_and_drops_program_arguments():
    out = substitute_entrypoint(perlmutter_script(), Path("/m/app.py"))
    assert "--master_addr=$MASTER_ADDR --master_port=$MASTER_PORT /m/app.py'\n" in out
    assert "train.py" not in out and "--epochs" not in out
    assert out.startswith("#!/bin/bash\n#SBATCH -A m1234_g\n")  # directives untouched


def test_substitution_across_continuation_lines_and_redirection():
    script = "srun torchrun --nnodes 2 \\\n  train.py \\\n  --lr 1 > out.log 2>&1\necho done\n"
    assert substitute_entrypoint(script, Path("/m/app.py")) == "srun torchrun --nnodes 2 \\\n  /m/app.py > out.log 2>&1\necho done\n"


def test_substitution_picks_the_named_entrypoint_and_ignores_comments():
    script = "# python old.py\npython prepare.py --n 1\nmpiexec -n 8 --ppn 4 python -u train.py --x\n"
    out = substitute_entrypoint(script, Path("/m/app.py"), entrypoint="prepare.py")
    assert out == "# python old.py\npython /m/app.py\nmpiexec -n 8 --ppn 4 python -u train.py --x\n"


def test_substitution_of_module_programs_keeps_launcher_modules():
    for script, expected in [
            ("python -m torch.distributed.run --nproc_per_node 4 -m pkg.train --lr 1\n",
             "python -m torch.distributed.run --nproc_per_node 4 /m/app.py\n"),
            ("deepspeed --num_gpus 4 --module pkg.train --deepspeed\n", "deepspeed --num_gpus 4 /m/app.py\n")]:
        assert substitute_entrypoint(script, Path("/m/app.py")) == expected


# Issue 10, finding 2: the mini-app replaces the known program at its place on the launch line, and
# nothing else; a script the verifier cannot edit that precisely is refused, never half-replaced.
def test_a_python_config_argument_is_not_taken_for_the_program():
    script = "srun python tools/train.py configs/faster_rcnn.py --work-dir out\n"
    assert substitute_entrypoint(script, Path("/m/app.py"), "tools/train.py") == "srun python /m/app.py\n"
    assert substitute_entrypoint(script, Path("/m/app.py")) == "srun python /m/app.py\n"  # the extracted program


def test_code_in_a_quoted_argument_never_runs_in_place_of_the_mini_app(tmp_path):
    marker = tmp_path / "marker"
    script = f"python -m timeit \"__import__('pathlib').Path('{marker}').touch()\" '# x.py'\n"
    out = substitute_entrypoint(script, Path("/m/app.py"))
    assert out == "python /m/app.py\n"  # the module and all its arguments are gone
    with pytest.raises(MapleError, match="no launch lines running 'x.py'"):
        substitute_entrypoint(script, Path("/m/app.py"), "x.py")


def test_a_program_the_verifier_cannot_place_is_refused():
    hidden = 'CMD="python train.py --lr 1"\nsrun bash -c "$CMD"\n'  # the program lives in a variable
    with pytest.raises(MapleError, match="no launch lines running 'train.py' as a word of its own"):
        substitute_entrypoint(hidden, Path("/m/app.py"), "train.py")


def test_substitution_without_a_launch_line_is_an_error():
    with pytest.raises(MapleError, match="no launch line"):
        substitute_entrypoint("#!/bin/bash\necho hi\n", Path("/m/app.py"))


def test_adaptation_drops_site_directives_only():
    script, notes = adapt_directives(DELTA_SCRIPT)
    assert "#SBATCH --nodes=2 --ntasks-per-node=1 --gpus-per-node=4\n" in script
    for gone in ("bbka-delta-gpu", "gpuA100x4", "02:00:00"):
        assert gone not in script
    assert notes == ["dropped site directive --account=bbka-delta-gpu", "dropped site directive --partition=gpuA100x4",
                     "dropped site directive --time=02:00:00"]


def test_adaptation_drops_cscs_uenv_and_container_engine_options():
    script = "#!/bin/bash\n#SBATCH -N 2 --uenv=pytorch/v2.8.0:/user-environment --view=default\n" \
             "#SBATCH --environment=ngc.toml\nsrun python train.py\n"
    adapted, notes = adapt_directives(script)
    assert adapted == "#!/bin/bash\n#SBATCH -N 2\nsrun python train.py\n" and len(notes) == 3


def test_adaptation_fits_gpu_requests_only_when_asked():
    script = "#!/bin/bash\n#SBATCH -N 2 --gpus=v100-32:16\n#SBATCH --gres=gpu:2 --gpus-per-node=4\nsrun hostname\n"
    assert adapt_directives(script)[0] == script  # a request too big for a node stays Slurm's to refuse
    fitted, notes = adapt_directives(script, max_gpus_per_node=4)
    assert fitted == "#!/bin/bash\n#SBATCH -N 2 --gpus-per-node=4\n#SBATCH --gres=gpu:2 --gpus-per-node=4\nsrun hostname\n"
    assert notes == ["GPU request --gpus=v100-32:16 fitted to this cluster's 4-GPU nodes: --gpus-per-node=4"]


def test_missing_sbatch_is_a_clear_error_not_a_hang(tmp_path):
    with pytest.raises(MapleError, match="sbatch not found"):
        verify_slurm(write(tmp_path, perlmutter_script()), miniapp=MINIAPP, env={"PATH": str(tmp_path)})


# --- real jobs on the test cluster ---

@pytest.mark.cluster
def test_two_node_job_runs_eight_ranks_on_both_nodes(slurm_cluster, tmp_path, master_port):
    result = verify_slurm(write(tmp_path, perlmutter_script(), master_port), miniapp=MINIAPP, timeout=JOB_TIMEOUT,
                          env=slurm_cluster.job_env, workdir=tmp_path)
    assert result.ok, result.message + "\n" + result.log
    assert result.state == "COMPLETED" and result.exit_code == 0
    assert result.result["ranks_seen"] == list(range(slurm_cluster.nodes * slurm_cluster.gpus_per_node))
    assert result.result["hostnames"] == ["n1", "n2"]


@pytest.mark.cluster
def test_each_call_submits_the_files_text_of_that_moment_as_written_without_adaptation(slurm_cluster, tmp_path):
    # The debug loop rewrites the script between runs: nothing of an earlier call may be reused.
    # Unadapted, a partition unknown here and a walltime over the partition's limit are Slurm's to refuse.
    path = write(tmp_path, "#!/bin/bash\n#SBATCH -N 1 -p nosuch\nsrun python train.py\n")
    first = verify_slurm(path, miniapp=MINIAPP, adapt=False, env=slurm_cluster.job_env, workdir=tmp_path)
    path.write_text("#!/bin/bash\n#SBATCH -N 1 -t 02:00:00\nsrun python train.py\n")
    second = verify_slurm(path, miniapp=MINIAPP, adapt=False, env=slurm_cluster.job_env, workdir=tmp_path)
    assert "invalid partition specified: nosuch" in first.log
    assert second.state == "REJECTED" and "Requested time limit is invalid" in second.message
    assert "nosuch" not in second.log


@pytest.mark.cluster
def test_every_node_claiming_node_rank_0_hangs_and_is_reported_as_a_timeout(slurm_cluster, tmp_path, master_port):
    result = verify_slurm(write(tmp_path, perlmutter_script(node_rank="0"), master_port), miniapp=MINIAPP, timeout=40,
                          env=slurm_cluster.job_env, workdir=tmp_path)
    assert not result.ok and result.state == "TIMEOUT" and result.result is None
    assert "still RUNNING after the 40 s timeout and was cancelled" in result.message
    # Both torchrun agents think they host the rendezvous; the second cannot listen on its port.
    assert "EADDRINUSE" in result.log
    # What the debug agent reads: Slurm's last word on the job, then why maple-ci ended it.
    assert "\nJobState=CANCELLED Reason=" in result.log
    assert result.log.endswith(f"maple-ci: verification timeout: {result.message.split(';')[0]}\n")


@pytest.mark.cluster
def test_a_job_that_never_starts_is_cancelled_with_slurms_reason(slurm_cluster, tmp_path):
    script = perlmutter_script().replace("#SBATCH -N 2\n", "#SBATCH -N 2\n#SBATCH --begin=now+1hour\n")
    result = verify_slurm(write(tmp_path, script), miniapp=MINIAPP, timeout=5, env=slurm_cluster.job_env, workdir=tmp_path)
    assert not result.ok and result.state == "TIMEOUT"
    assert "still PENDING (Reason=BeginTime) after the 5 s timeout and was cancelled" in result.message


@pytest.mark.cluster
def test_loading_a_module_the_site_does_not_have_fails_with_lmods_error(slurm_cluster, tmp_path, master_port):
    script = perlmutter_script().replace("#!/bin/bash\n", "#!/bin/bash\nset -e\n").replace(
        "export MASTER_PORT", "module load nonexistent/1.0\nexport MASTER_PORT")
    result = verify_slurm(write(tmp_path, script, master_port), miniapp=MINIAPP, env=slurm_cluster.job_env, workdir=tmp_path)
    assert not result.ok and result.state == "FAILED"
    assert "module(s) are unknown" in result.log and "nonexistent/1.0" in result.log
    assert result.log.endswith("JobState=FAILED Reason=NonZeroExitCode\n")


@pytest.mark.cluster
def test_srun_launch_lines_are_labelled_per_task_and_captures_are_not(slurm_cluster, tmp_path):
    # One task per node; each prints its node and runs the quick mini-app as a world of one.
    script = ("#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=1\n"
              "head=$(srun -N 1 -n 1 hostname)\necho \"head=$head\"\n"
              "srun bash -c 'echo \"on $(hostname)\"; python train.py --steps 1'\n")
    result = verify_slurm(write(tmp_path, script), miniapp=MINIAPP, timeout=JOB_TIMEOUT, env=slurm_cluster.job_env,
                          workdir=tmp_path)
    assert result.ok, result.message + "\n" + result.log
    assert result.log.startswith("head=n1\n")  # the capture's value is unlabelled (and the node its own host)
    assert "\n0: on n1\n" in result.log and "\n1: on n2\n" in result.log
    assert "JobState=" not in result.log  # only a job that did not complete gets the line


@pytest.mark.cluster
def test_a_batch_job_sees_no_secret_of_the_process_that_submits_it(slurm_cluster, tmp_path):
    from test_verify_jobenv import SECRETS, assert_no_secret  # the bot's and the CI job's secrets

    script = "#!/bin/bash\n#SBATCH -N 1\nenv\nsrun python train.py\n"
    result = verify_slurm(write(tmp_path, script), miniapp=MINIAPP, timeout=JOB_TIMEOUT,
                          env={**slurm_cluster.job_env, **SECRETS}, workdir=tmp_path)
    assert result.ok, result.message + "\n" + result.log
    assert "\nSLURM_JOB_ID=" in result.log and "\nMODULEPATH=" in result.log  # the job's own environment, printed
    assert_no_secret(result.model_dump())
