"""Submission refusals whose message names what to change (issue 18 item 2: fixes that read the
message and the script): PBS resources and projects, a site's memory form, LSF output, Flux under
srun, conda's hook. Inputs are written in styles the benchmark cases do not use."""

from maple_ci.debug import diagnose


def first(script: str, log: str):
    found = diagnose(script, log, None)
    return found, (found.candidates[0] if found.candidates else None)


def test_pbs_drops_the_node_property_qsub_names_and_only_that_one():
    script = "#!/bin/bash\n#PBS -l nodes=2:ppn=16:intel:ib\n#PBS -l walltime=1:00:00\nmpirun ./a.out\n"
    _, top = first(script, "qsub: Unknown resource: intel\n")
    assert "#PBS -l nodes=2:ppn=16:ib\n" in top.script
    # A resource the script does not name as a node property: no edit, the explanation stays.
    found, top = first(script, "qsub: Unknown resource: gpus\n")
    assert top is None and "another site defines" in found.advice.text


def test_pbs_project_given_as_a_variable_is_a_value_to_fill_in():
    script = "#!/bin/bash\n#PBS -P ${PROJ}\n#PBS -l ncpus=48\npython train.py\n"
    log = "Error: You are not a member of project ${PROJ}. You must be a member of a project to submit a job under that project.\n"
    found, top = first(script, log)
    assert top.ops[0].name == "-P" and top.ops[0].value == "<account>" and found.advice.kind == "site_value"
    assert "#PBS -P <account>\n" in top.script and "${PROJ}" not in top.script


def test_a_site_that_takes_memory_per_cpu_only_gets_mem_per_cpu_for_mem():
    script = "#!/bin/bash\n#SBATCH -n 4\n#SBATCH --mem=16G\nsrun ./sim\n"
    _, top = first(script, "sbatch: error: lua: Requesting memory by node is not supported. Use --mem-per-cpu.\n")
    assert [(op.op, op.name) for op in top.ops] == [("remove_directive", "--mem"), ("set_directive", "--mem-per-cpu")]
    assert "--mem=16G" not in top.script and "#SBATCH --mem-per-cpu=<mem_per_cpu>" in top.script


def test_lsf_output_to_dev_null_or_none_is_written_to_a_file():
    log = "Returning output by mail is not supported on this cluster.\nRequest aborted by esub. Job not submitted.\n"
    _, top = first("#!/bin/sh\n#BSUB -n 4\n#BSUB -o /dev/null\n./run\n", log)
    assert "#BSUB -o lsf-%J.out\n" in top.script and "/dev/null" not in top.script
    _, top = first("#!/bin/sh\n#BSUB -n 4\n./run\n", log)
    assert "#BSUB -o lsf-%J.out" in top.script
    found, top = first("#!/bin/sh\n#BSUB -o out.%J\n./run\n", log)  # already a file: nothing to edit
    assert top is None


def test_flux_started_by_srun_gets_the_nodes_cpus_per_broker():
    script = "#!/bin/bash\n#SBATCH -N 4\nsrun -N4 --ntasks-per-node=1 flux start flux run -N4 -n64 ./app\n"
    log = "Nov 28 10:00:00 broker.err[0]: rc2.0 ...\n2.1s: job.exception fABC type=alloc severity=0 unsatisfiable request\n"
    found, top = first(script, log)
    assert found.failure.line_no == 2 and "srun --cpus-per-task=$SLURM_CPUS_ON_NODE -N4" in top.script
    _, top = first(script.replace("srun -N4", "srun -N4 -c 64"), log)  # it already gives them
    assert top is None


def test_conda_activate_in_a_batch_shell_gets_the_hook_before_it():
    script = "#!/bin/bash\n#SBATCH -N 1\nmodule load miniforge\n  conda activate ml\npython t.py\n"
    _, top = first(script, "CondaError: Run 'conda init' before 'conda activate'\n")
    assert 'eval "$(conda shell.bash hook)"\n  conda activate ml\n' in top.script
    hooked = script.replace("module load miniforge\n", "source $HOME/miniforge3/etc/profile.d/conda.sh\n")
    assert first(hooked, "CondaError: Run 'conda init' before 'conda activate'\n")[1] is None


def test_lsf_run_and_memory_limits_ask_for_the_queues_limit_with_bqueues():
    script = "#!/bin/bash\n#BSUB -nnodes 2\n#BSUB -W 2:00\n#BSUB -P abc123\njsrun -n 12 python train.py\n"
    found, top = first(script, "Exited with exit code 140.\nTERM_RUNLIMIT: job killed after reaching LSF run time limit.\n")
    assert found.failure.line_no == 2 and "#BSUB -W <max_walltime>\n" in top.script and "RUNLIMIT" in top.find["max_walltime"]
    found, top = first(script, "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.\n")
    assert "#BSUB -M <mem>" in top.script and "bqueues -l" in top.find["mem"]


def test_nersc_policy_refusals_name_the_missing_node_type_or_the_allocation():
    script = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH -q regular\n#SBATCH -A m1234\nsrun python t.py\n"
    policy = "sbatch: error: Job request does not match any supported policy.\nsbatch: error: Batch job submission failed: Unspecified error.\n"
    found, top = first(script, policy)
    assert top.ops[0].name == "--constraint" and found.advice.kind == "site_value"
    found, top = first(script.replace("-q regular", "-q regular\n#SBATCH -C gpu"), policy)
    assert top is None and found.advice.kind == "policy" and "QOS table" in found.advice.text
    found, top = first(script, "sbatch: error: Job cost estimated at 900.00 NERSC-Hours, your balance is 1.00 NERSC-Hours. Cannot proceed\n")
    assert top is None and found.advice.kind == "policy" and "Iris" in found.advice.text


def test_torchrun_missing_inside_a_quoted_srun_command_starts_through_python():
    script = "#!/bin/bash\n#SBATCH -N 2\nsrun bash -c 'torchrun --nnodes 2 --node_rank $SLURM_NODEID train.py'\n"
    _, top = first(script, "bash: line 1: torchrun: command not found\n")
    assert "srun bash -c 'python3 -m torch.distributed.run --nnodes 2" in top.script


def test_a_job_array_over_the_submit_limit_goes_in_chunks_of_the_limit():
    log = "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)\n"
    found, top = first("#!/bin/bash\n#SBATCH --array=1-500\n#SBATCH -A proj\nsrun ./task $SLURM_ARRAY_TASK_ID\n", log)
    assert "#SBATCH --array=1-<max_submit>\n" in top.script and "maxsubmit" in top.find["max_submit"]
    found, top = first("#!/bin/bash\n#SBATCH --array=1-20\n#SBATCH -A proj\nsrun ./task\n", log)  # a small array: the limit is elsewhere
    assert top is None and found.advice.kind == "policy"
