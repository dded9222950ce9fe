"""The debug agent's answers on the kinds of misses issue 18 names: a site value it lacks, one fix
per class whatever the message says, wording variants, a fix applied without its precondition,
outcomes that are not script fixes, and a port choice that recreates the failure it fixes."""

import subprocess

import pytest

from maple_ci import debug

SLURM = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --time=02:00:00\nsrun python train.py\n"


def ops_of(candidate) -> list[dict]:
    return [op.model_dump() for op in candidate.ops]


# --------------------------------------------------------------------------------------------
# 1. A site value maple does not have: a placeholder and the command that finds it


INVALID_ACCOUNT = "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified\n"
GPU_PARTITION = SLURM.replace("#SBATCH --time", "#SBATCH --partition=gpu\n#SBATCH --time")


def test_a_missing_account_becomes_a_placeholder_with_the_command_that_lists_accounts():
    found = debug.diagnose(GPU_PARTITION, INVALID_ACCOUNT, cluster=None)
    top = found.candidates[0]
    assert ops_of(top) == [{"op": "set_directive", "name": "--account", "value": "<account>"}]
    assert "#SBATCH --account=<account>\n" in top.script
    assert top.find["account"].startswith("sacctmgr show assoc user=$USER")
    assert found.advice.kind == "site_value" and "sacctmgr show assoc" in found.advice.text


def test_a_walltime_over_the_limit_names_where_the_limit_is_shown_per_scheduler():
    slurm = debug.diagnose(SLURM, "sbatch: error: Batch job submission failed: Requested time limit is invalid "
                                  "(missing or exceeds some limit)\n", cluster=None)  # fmt: skip
    assert slurm.candidates[0].find == {"max_walltime": "scontrol show partition  (MaxTime)"}
    pbs_script = "#!/bin/bash\n#PBS -l select=2\n#PBS -l walltime=48:00:00\nmpiexec -n 8 python train.py\n"
    pbs = debug.diagnose(pbs_script, "qsub: Job violates queue and/or server resource limits\n", cluster=None)
    assert ops_of(pbs.candidates[0]) == [{"op": "set_directive", "name": "-l walltime", "value": "<max_walltime>"}]
    assert pbs.candidates[0].find["max_walltime"].startswith("qstat -Qf")


def test_an_invalid_account_for_a_job_naming_neither_account_nor_partition_is_the_centers_to_fix():
    # The default association was refused: no edit of the script helps (Aalto Triton FAQ).
    found = debug.diagnose(SLURM, INVALID_ACCOUNT, cluster=None)
    assert found.candidates == []
    assert found.advice.kind == "infrastructure" and "sacctmgr show assoc user=$USER" in found.advice.text
    assert "ask the center" in found.advice.text and "Resubmit" not in found.advice.text


def test_the_loop_never_runs_a_placeholder_and_says_what_to_fill_in():
    step = debug.next_fix(GPU_PARTITION, INVALID_ACCOUNT, None, {})
    assert step.stop == "no_fix" and step.script == GPU_PARTITION
    assert "needs account" in step.message and "sacctmgr" in step.message


# --------------------------------------------------------------------------------------------
# 2. Fixes read the message and the script; several candidates, ranked


def test_cpus_per_gpu_refused_by_the_nodes_becomes_cpus_per_task_with_the_scripts_count():
    script = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:4\n#SBATCH --cpus-per-gpu=6\nsrun python train.py\n"
    log = "sbatch: error: Batch job submission failed: Requested node configuration is not available\n"
    found = debug.diagnose(script, log, cluster="perlmutter")
    assert ops_of(found.candidates[0]) == [
        {"op": "remove_directive", "name": "--cpus-per-gpu"}, {"op": "set_directive", "name": "--cpus-per-task", "value": "6"}]  # fmt: skip
    assert "#SBATCH --cpus-per-task=6" in found.candidates[0].script and "cpus-per-gpu" not in found.candidates[0].script
    assert len(found.candidates) >= 2  # the GPU-flag rewrite stays, ranked after


def test_the_option_a_site_says_to_switch_to_is_read_from_its_message():
    script = "#!/bin/bash\n#SBATCH --gres=gpu:2\n#SBATCH --time=1:00:00\nsrun python train.py\n"
    log = "sbatch: error: Parameter --gres=gpu:2 no longer acceptable, please switch to --gpus=2\n"
    top = debug.diagnose(script, log, cluster=None).candidates[0]
    assert top.script == "#!/bin/bash\n#SBATCH --time=1:00:00\n#SBATCH --gpus=2\nsrun python train.py\n"


def test_a_site_filter_naming_the_option_gets_it_with_the_value_it_names_or_a_placeholder():
    one_node = debug.diagnose(SLURM, "All GPU jobs are limited to 1 node. Please reschedule your job using `--nodes=1`.\n", None)
    assert "#SBATCH --nodes=1\n" in one_node.candidates[0].script and "--nodes=2" not in one_node.candidates[0].script
    ntasks = debug.diagnose(SLURM, "Users must specify `--ntasks` or `--mem` for all GPU partitions.\n", None)
    assert ops_of(ntasks.candidates[0]) == [{"op": "set_directive", "name": "--ntasks", "value": "<value>"}]
    assert ntasks.advice.kind == "site_value" and "scontrol show partition" in ntasks.advice.text


def test_invalid_device_ordinal_under_gpus_per_task_is_not_given_a_torchrun_edit():
    script = "#!/bin/bash\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-task=1\nsrun python train.py\n"
    log = "RuntimeError: CUDA error: invalid device ordinal\n"
    found = debug.diagnose(script, log, cluster=None)
    # The job's one GPU per task becomes the node's GPUs; srun --gpu-bind=none is the alternative.
    assert [ops_of(c) for c in found.candidates] == [
        [{"op": "remove_directive", "name": "--gpus-per-task"}, {"op": "set_directive", "name": "--gpus-per-node", "value": "4"}],
        [{"op": "add_flag", "launcher": "srun", "flag": "--gpu-bind", "value": "none"}]]
    torchrun = "#!/bin/bash\n#SBATCH -N 1\nsrun torchrun --nproc_per_node=8 train.py\n"
    found = debug.diagnose(torchrun, log, cluster="perlmutter")
    assert ops_of(found.candidates[0]) == [{"op": "replace_flag", "flag": "--nproc_per_node", "value": "4"}]


def test_port_in_use_with_a_pinned_node_rank_ranks_one_launcher_per_node_first():
    script = ("#!/bin/bash\n#SBATCH --nodes=2\n"
              "srun python -m torch.distributed.launch --nproc_per_node=4 --nnodes=2 --node_rank=0 --master_addr=$HOST train.py\n")  # fmt: skip
    found = debug.diagnose(script, "RuntimeError: Address already in use\n", cluster=None)
    assert [c.entry_id for c in found.candidates] == ["torch-master-port-in-use"] * 2
    assert "--node_rank=$SLURM_NODEID" in found.candidates[0].script and "#SBATCH --ntasks-per-node=1" in found.candidates[0].script
    assert "export MASTER_PORT=" in found.candidates[1].script


def test_the_modules_lmod_lists_become_ranked_candidates():
    script = "#!/bin/bash\n#SBATCH -N 1\nmodule load hdf5/1.14.3\nsrun ./app\n"
    log = ('Lmod has detected the following error:  These module(s) or extension(s) exist but cannot be loaded as requested:\n'
           '"hdf5/1.14.3"\n   Try: "module spider hdf5/1.14.3" to see how to load the module(s).\n'
           "   Or load any one of these options:\n      module load intel/2024.1 hdf5/1.14.3\n      module load gcc/13.2.0 hdf5/1.14.3\n")  # fmt: skip
    found = debug.diagnose(script, log, cluster=None)
    loads = [c.script.split("\n")[2] for c in found.candidates]
    assert loads == ["module load gcc/13.2.0 hdf5/1.14.3", "module load intel/2024.1 hdf5/1.14.3",
                     "module load <prerequisite> hdf5/1.14.3"]  # fmt: skip
    assert found.candidates[2].find == {"prerequisite": "module spider <module>/<version>"}


# --------------------------------------------------------------------------------------------
# 3. Wording variants of known classes


@pytest.mark.parametrize("log, entry", [
    ("Epoch 1: 12%\nKilled\n", "host-oom-kill"),
    ("  File \"/x/torch/utils/data/dataloader.py\", line 1, in _start\nOSError: [Errno 12] Cannot allocate memory\n", "host-oom-kill"),
    ("RuntimeError: Address already in use\n", "torch-master-port-in-use"),
    ("sbatch: error: Cannot find GPU specification, you may not submit a job not requesting GPUs in a GPU partition, partition: gpu\n",
     "slurm-gpu-partition-needs-gpus"),
    ("srun: error: Task launch for 812.0 failed on node gpu017: Job credential expired\n", "slurm-credential-expired"),
])  # fmt: skip
def test_wording_variants_have_a_class(log, entry):
    found = debug.diagnose(SLURM, log, cluster=None)
    assert found.matches and found.matches[0].entry.id == entry


# --------------------------------------------------------------------------------------------
# 4. A fix is offered only when its precondition holds


def test_execve_torchrun_gets_export_all_only_when_the_script_drops_the_environment():
    log = "slurmstepd: error: execve(): torchrun: No such file or directory\nsrun: error: gpu01: task 0: Exited with exit code 2\n"
    plain = "#!/bin/bash\n#SBATCH -N 2\nmodule load pytorch\nsrun torchrun --nnodes=2 --nproc_per_node=4 train.py\n"
    found = debug.diagnose(plain, log, cluster=None)
    assert all("--export" not in str(ops_of(c)) for c in found.candidates)
    assert "srun python3 -m torch.distributed.run --nnodes=2" in found.candidates[0].script
    assert found.advice.kind == "infrastructure" and "tell the center" in found.advice.text.lower()
    dropped = plain.replace("srun torchrun", "srun --export=NONE torchrun")
    found = debug.diagnose(dropped, log, cluster=None)
    assert ops_of(found.candidates[0]) == [{"op": "add_flag", "launcher": "srun", "flag": "--export", "value": "ALL"}]


# --------------------------------------------------------------------------------------------
# 5. Outcomes that are not script fixes say what to do, with no edit


def test_a_job_limit_is_policy_advice_to_wait_or_cancel_without_an_edit():
    script = "#!/bin/bash\n#SBATCH --account=proj42\n#SBATCH -N 1\nsrun python train.py\n"
    log = "sbatch: error: AssocMaxSubmitJobLimit\nsbatch: error: Batch job submission failed: Job violates accounting/QOS policy\n"
    found = debug.diagnose(script, log, cluster=None)
    assert not found.candidates and found.advice.kind == "policy"
    assert "squeue -u $USER" in found.advice.text and "scancel" in found.advice.text
    pbs = debug.diagnose("#!/bin/bash\n#PBS -q debug\nmpiexec python t.py\n", "qsub: would exceed queue debug's per-user limit\n", None)
    assert pbs.advice.kind == "policy" and "qdel" in pbs.advice.text


def test_an_expired_credential_is_infrastructure_advice_naming_the_node():
    log = "srun: error: Task launch for 812.0 failed on node gpu017: Job credential expired\n"
    report = debug.debug_loop(SLURM, lambda s: debug.RunOutcome(False, log), cluster=None)
    assert report.stop_reason == "infrastructure" and not report.attempts and report.script == SLURM
    assert "--exclude=gpu017" in report.message and "tell the center" in report.message


def test_a_program_error_points_at_the_line_in_the_users_program():
    log = ("Traceback (most recent call last):\n"
           '  File "/home/u/proj/train.py", line 88, in <module>\n    main()\n'
           '  File "/home/u/proj/model.py", line 41, in forward\n    x = self.fc(x)\n'
           '  File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1736, in _call_impl\n'
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")  # fmt: skip
    found = debug.diagnose(SLURM, log, cluster=None)
    assert found.advice.kind == "user_code" and not found.candidates
    assert "/home/u/proj/model.py:41" in found.advice.text


# --------------------------------------------------------------------------------------------
# 6. A port fix is checked against its own failure mode


def _ports(expression: str, env: dict) -> int:
    out = subprocess.run(["bash", "-c", f"echo {expression}"], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout)


def test_every_master_port_a_fix_sets_is_outside_the_ephemeral_range_and_fixed_per_job():
    # Linux hands ports of net.ipv4.ip_local_port_range (32768-60999 by default) to outgoing
    # connections: a rendezvous port in it can be taken by any of them.
    values = [op.value for e in debug.load_kb() for fix in e.alternatives for op in fix.ops
              if op.op == "export_env" and op.name == "MASTER_PORT"]  # fmt: skip
    assert values
    for value in values:
        for job in [1, 29500, 32768, 4242424, 60999, 9876543, 12345678]:
            slurm = _ports(value, {"SLURM_JOB_ID": str(job)})
            pbs = _ports(value, {"PBS_JOBID": f"{job}.aurora-pbs-0001.hostmgmt.cm.aurora.alcf.anl.gov"})
            assert slurm == pbs == _ports(value, {"SLURM_JOB_ID": str(job)})  # the same job, the same port
            assert 1024 <= slurm < 32768 or 60999 < slurm < 65536, (value, job, slurm)
