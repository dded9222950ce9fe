"""Fixes whose preconditions read the message and the script (issue 18 items 2-4), and the
replace_text values that must not be shell-quoted."""

from maple_ci.debug import apply_fix, diagnose
from maple_ci.debug.kb import ReplaceText

POLICY_LOG = (
    "sbatch: error: QOSMaxSubmitJobPerUserLimit\n"
    "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy "
    "(job submit limit, user's size and/or time limits)\n"
)
NO_ACCOUNT = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --time=01:00:00\nsrun python train.py\n"


def test_replace_text_value_with_spaces_is_the_script_text_not_shell_quoted():
    # A value captured from the script goes back into it as written: quoting it would make the
    # old text miss the script (no edit) or put quotes into the new line.
    script = "#!/bin/bash\nsrun python train.py --epochs 3\n"
    op = ReplaceText(op="replace_text", old="{launch}", new="{launch} --resume")
    patched = apply_fix(script, [op], {"launch": "srun python train.py --epochs 3"})
    assert patched == "#!/bin/bash\nsrun python train.py --epochs 3 --resume\n"


def test_a_named_job_count_limit_is_policy_not_a_missing_account():
    found = diagnose(NO_ACCOUNT, POLICY_LOG, None)
    assert not found.candidates and found.advice.kind == "policy"
    assert "squeue -u $USER" in found.advice.text


def test_the_generic_policy_message_on_a_script_without_account_offers_the_account():
    log = "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)\n"
    found = diagnose(NO_ACCOUNT, log, None)
    assert found.candidates[0].ops[0].name == "--account" and "sacctmgr" in found.candidates[0].find["account"]


def test_no_script_no_directive_edit_for_a_policy_message():
    found = diagnose("", POLICY_LOG.replace("QOSMaxSubmitJobPerUserLimit", "AssocGrpCPUMinutesLimit"), None)
    assert not found.candidates and found.advice.kind == "policy"


def test_torque_vmem_kill_adds_vmem_next_to_the_mem_the_script_asks_for():
    script = "#PBS -N gard\n#PBS -l nodes=1:ppn=8,mem=40gb\n#PBS -q default\nmpirun -np 8 HYPHYMPI GARD.bf\n"
    found = diagnose(script, "=>> PBS: job killed: vmem 3372163072 exceeded limit 2147483648\n", None)
    assert "#PBS -l nodes=1:ppn=8,mem=40gb,vmem=40gb\n" in found.candidates[0].script


def test_exact_match_interface_prefix_becomes_the_plain_name_from_the_script():
    script = "#!/bin/bash\nexport NCCL_SOCKET_IFNAME==enp90s0np0\npython train.py\n"
    found = diagnose(script, "node1:1:1 [0] NCCL WARN Bootstrap : no socket interface found\n", None)
    assert "export NCCL_SOCKET_IFNAME=enp90s0np0\n" in found.candidates[0].script


def test_srun_with_its_own_cpu_count_gets_no_inheritance_fix():
    log = "srun: error: Unable to create step for job 238051: More processors requested than permitted\n"
    inherits = diagnose("#!/bin/bash\n#SBATCH -c 8\nsrun ./app\n", log, None)
    assert inherits.candidates[0].ops[0].name == "SRUN_CPUS_PER_TASK"
    own = diagnose("#!/bin/bash\n#SBATCH -N 1\nsrun -n 8 -c 8 ./app\n", log, None)
    assert not own.candidates


def test_controller_timeout_is_infrastructure_and_a_full_tmp_a_scratch_value_to_fill():
    slow = diagnose("", "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n", None)
    assert slow.advice.kind == "infrastructure" and not slow.candidates
    tmp = diagnose("", "slurm_script: line 34: cannot create temp file for here-document: No space left on device\n", None)
    assert tmp.candidates[0].ops[0].name == "TMPDIR" and "df -h" in tmp.candidates[0].find["cache_dir"]


def test_directive_edits_land_before_the_first_command_where_the_scheduler_reads_them():
    # sbatch reads #SBATCH lines only up to the first command: one after it is a comment, so
    # editing it (as the old editor did) changed nothing the scheduler sees.
    from maple_ci.debug.kb import RemoveDirective, SetDirective

    # (--qos: removing an account or partition without a replacement is refused, policy.check_fix)
    script = "#!/bin/bash\n#SBATCH -N 1\nsrun hostname\n#SBATCH --qos=old\n"
    patched = apply_fix(script, [SetDirective(op="set_directive", name="-q", value="abc")])
    assert patched == "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --qos=abc\nsrun hostname\n#SBATCH --qos=old\n"
    assert apply_fix(patched, [RemoveDirective(op="remove_directive", name="--qos")]) == script
    pbs = "#!/bin/bash\n#PBS -l select=2\n#PBS -l walltime=3:00:00\n./a\n"
    assert "#PBS -l walltime=01:00:00\n" in apply_fix(pbs, [SetDirective(op="set_directive", name="-l walltime", value="01:00:00")])


HF_UNREACHABLE = "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached files\n"


def test_hub_unreachable_offers_offline_mode_unless_the_scheduler_timed_out_too():
    script = "#!/bin/bash\n#SBATCH --gpus=1\nsrun python train.py\n"
    offline = diagnose(script, HF_UNREACHABLE, None)
    assert offline.candidates[0].ops[0].name == "HF_HUB_OFFLINE" and offline.advice.kind == "fix"
    # The scheduler's own socket timed out as well: a site network outage, nothing to edit.
    outage = HF_UNREACHABLE + "salloc: error: Job submit/allocate failed: Socket timed out on send/recv operation\n"
    found = diagnose(script, outage, None)
    assert not found.candidates and found.advice.kind == "infrastructure"
    assert "resubmit" in found.advice.text


OOM = "slurmstepd: error: Detected 1 oom-kill event(s) in step 42.0 cgroup.\n"


def test_host_oom_raises_memory_in_the_form_the_script_gives_it():
    def first_op(script):
        return diagnose(script, OOM, None).candidates[0].ops[0].model_dump()

    assert first_op("#!/bin/bash\n#SBATCH --mem=4G\nsrun ./app\n")["name"] == "--mem"
    assert first_op("#!/bin/bash\n#SBATCH --mem-per-cpu=2G\nsrun ./app\n")["name"] == "--mem-per-cpu"
    # No memory request: the site's default per CPU, or, for tasks packed on shared nodes, the whole nodes.
    assert first_op("#!/bin/bash\n#SBATCH --time=01:00:00\n./app\n")["name"] == "--mem-per-cpu"
    assert first_op("#!/bin/bash\n#SBATCH -N 10\n#SBATCH --ntasks-per-node=40\nsrun ./app\n")["name"] == "--exclusive"


SBATCH_REFUSAL = (
    "sbatch: error: This does not look like a batch script.  The first\n"
    "sbatch: error: line must start with #! followed by the path to an interpreter.\n"
)


def test_sbatch_refusing_the_script_moves_an_indented_shebang_to_the_start_or_adds_one():
    indented = "    #!/bin/bash\n#SBATCH -N 1\nsrun hostname\n"
    assert diagnose(indented, SBATCH_REFUSAL, None).candidates[0].script == "#!/bin/bash\n#SBATCH -N 1\nsrun hostname\n"
    missing = "#SBATCH -N 1\nsrun hostname\n"
    assert diagnose(missing, SBATCH_REFUSAL, None).candidates[0].script == "#!/bin/bash\n#SBATCH -N 1\nsrun hostname\n"
    # A script that starts with its #! line is not what sbatch refused: no edit.
    assert not diagnose("#!/bin/bash\nsrun hostname\n", SBATCH_REFUSAL, None).candidates


def test_replace_text_whose_new_lies_inside_its_old_is_not_taken_as_done():
    patched = apply_fix("  #!/bin/sh\necho\n", [ReplaceText(op="replace_text", old="  #!/bin/sh", new="#!/bin/sh")])
    assert patched == "#!/bin/sh\necho\n"


def test_conda_without_a_driver_gets_the_cuda_version_the_script_installs():
    log = "  - pytorch-cuda=12.1 -> __cuda\nYour installed CUDA driver is: not available\n"
    script = "#!/bin/bash\nconda create -y -n ml pytorch pytorch-cuda=12.1 -c pytorch -c nvidia\n"
    found = diagnose(script, log, None)
    assert found.failure.line == "Your installed CUDA driver is: not available"
    assert [op.model_dump() for op in found.candidates[0].ops] == [{"op": "export_env", "name": "CONDA_OVERRIDE_CUDA", "value": "12.1"}]
    # Nothing names the version (a CUDA package without one): advice, not a guessed number.
    assert not diagnose("#!/bin/bash\nconda create -n ml pytorch-cuda\n", log, None).candidates


def test_a_unified_runtime_abort_is_for_the_center_not_a_script_edit():
    log = "[0] ur_die: urEventWait must not be called for an internal event\nAborted (core dumped)\n"
    found = diagnose("#!/bin/bash\nmpiexec -n 24 --ppn 12 python3 train.py\n", log, None)
    assert found.matches[0].entry.id == "unified-runtime-abort" and not found.candidates
    assert found.advice.kind == "infrastructure" and "one node" in found.advice.text


def test_a_port_in_the_ephemeral_range_is_moved_out_of_it_even_without_a_script():
    log = ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
           "address. port: 57062, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\n")
    found = diagnose("", log, None)
    assert found.candidates[0].ops[0].name == "MASTER_PORT"
    # The default 29500 is outside the range: no script, no MASTER_PORT to name, no edit.
    assert not diagnose("", log.replace("57062", "29500"), None).candidates


def test_an_unresolvable_rendezvous_host_is_replaced_by_the_first_nodes_address():
    script = "#!/bin/bash\n#SBATCH --nodes=4\nsrun torchrun --rdzv_backend=c10d --rdzv_endpoint=$(hostname):29400 train.py\n"
    log = "RendezvousConnectionError: TCP client failed to connect/validate to host slinky-0:29400 - Name or service not known\n"
    patched = diagnose(script, log, None).candidates[0].script
    assert "head_node_ip=$(hostname --ip-address)\nsrun torchrun --rdzv_backend=c10d --rdzv_endpoint=$head_node_ip:29400 train.py\n" in patched
    # An endpoint that is already an address has nothing to replace: the advice stays infrastructure.
    by_ip = diagnose(script.replace("$(hostname)", "10.0.0.1"), log, None)
    assert not by_ip.candidates and by_ip.advice.kind == "infrastructure"


def test_no_gpu_requested_offers_both_slurm_gpu_request_forms():
    script = "#!/bin/bash\n#SBATCH -p gpu\nsrun python predict.py\n"
    found = diagnose(script, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", None)
    assert [(c.ops[0].name, c.ops[0].value) for c in found.candidates] == [("--gpus", "<gpus>"), ("--gres", "gpu:<gpus>")]


def test_a_programs_missing_system_library_is_for_the_node_and_a_frameworks_cuda_library_for_the_modules():
    script = "#!/bin/bash\n#SBATCH --nodes=1\nmodule load myprogram\nmyprogram input.dat\n"
    node = diagnose(script, "myprogram: error while loading shared libraries: libicudata.so.50: cannot open shared object file: No such file or directory\n", None)
    assert node.advice.kind == "infrastructure" and "ldconfig -p" in node.advice.text and not node.candidates
    cuda = diagnose(script, "ImportError: libcublas.so.10.0: cannot open shared object file: No such file or directory\n", None)
    assert cuda.advice.kind == "environment"


def test_a_submit_filter_refusal_says_to_change_the_request_or_tell_the_center_without_contradiction():
    script = "#!/bin/tcsh\n#PBS -q gpu\n#PBS -l procs=60,gpus=1:shared\n./run\n"
    log = 'Must request at least one GPU to use the "gpu" queue!\nqsub: submit filter returned an error code, aborting job submission.\n'
    found = diagnose(script, log, None)
    assert found.advice.kind == "infrastructure" and "change the request" in found.advice.text
    assert "Not a problem with the script" not in found.advice.text


def test_a_known_case_without_an_applicable_edit_still_explains_itself():
    log = "srun: Job 37398367 step creation temporarily disabled, retrying (Requested nodes are busy)\n"
    found = diagnose("#!/bin/bash\n#SBATCH -N 1\npython run_optimization.py\n", log, None)
    assert found.advice.kind == "none" and "srun --exact" in found.advice.text
    assert "no known case" not in found.advice.text


def test_cudas_own_out_of_memory_at_start_up_is_the_gpu_not_the_batch_size():
    start_up = diagnose("", "    work = default_pg.barrier(opts=opts)\nRuntimeError: CUDA error: out of memory\n", None)
    assert start_up.advice.kind == "infrastructure" and "nvidia-smi" in start_up.advice.text
    allocator = diagnose("", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n", None)
    assert allocator.advice.kind == "user_code"


def test_an_environment_case_with_no_edit_is_environment_advice():
    found = diagnose("#!/bin/bash\nmodule load cuda/11.8\nsrun ./app\n", "ERROR: Unable to locate a modulefile for 'cuda/11.8'\n", None)
    assert not found.candidates and found.advice.kind == "environment" and "module" in found.advice.text


def test_a_conda_environment_unknown_by_name_and_a_missing_input_file_are_advice():
    script = "#!/bin/bash\n#SBATCH -N 1\nmodule load miniforge3\nconda activate dl\nsrun python t.py --data /gpfs/alpine/proj/d\n"
    conda = diagnose(script, "EnvironmentNameNotFound: Could not find conda environment: dl\nYou can list all discoverable environments with `conda info --envs`.\n", None)
    assert conda.matches[0].entry.id == "conda-environment-not-found" and conda.advice.kind == "environment"
    data = diagnose(script, "FileNotFoundError: [Errno 2] No such file or directory: '/gpfs/alpine/proj/d/train.bin'\n", None)
    assert data.advice.kind == "user_code" and "purged" in data.advice.text and not data.candidates
