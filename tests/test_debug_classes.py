"""Rules for classes of failures the held-out debug cases showed (issue 18): the socket interface
NCCL/RCCL/Gloo use, MPI slot counts, caches on a full or read-only filesystem, PBS servers without
`select`, CUDA driver and GLIBC mismatches, DeepSpeed's op builds, and errors in logs with no
scheduler around them. Each test's inputs are written in styles the benchmark cases do not use."""

from maple_ci import debug
from maple_ci.values import edit_refusal

SLURM = "#!/bin/bash\n#SBATCH --nodes=2\nsrun python train.py\n"
HOST = "torchrun --nnodes=2 --nproc_per_node=8 --rdzv_endpoint=10.0.0.1:29500 train.py\n"


def ops_of(candidate) -> list[dict]:
    return [op.model_dump() for op in candidate.ops]


def first_ops(script: str, log: str) -> list[dict]:
    found = debug.diagnose(script, log, cluster=None)
    return ops_of(found.candidates[0]) if found.candidates else []


# --------------------------------------------------------------------------------------------
# Socket interfaces


def test_the_real_interface_next_to_bridges_in_ncclS_listing_is_the_value():
    log = ("worker0: ncclSystemError: System call (socket, malloc, munmap, etc) failed.\n"
           "worker0:12:12 [0] NCCL INFO NET/Socket : Using [0]virbr0:192.168.122.1<0> [1]enp65s0f1:10.3.0.7<0>\n")  # fmt: skip
    assert first_ops(HOST, log) == [{"op": "export_env", "name": "NCCL_SOCKET_IFNAME", "value": "enp65s0f1"}]


def test_a_listing_of_real_interfaces_only_is_no_evidence_for_an_interface():
    log = "ncclSystemError: System call (socket) failed\nNCCL INFO NET/Socket : Using [0]ib0:10.1.0.2<0> [1]eth0:10.2.0.2<0>\n"
    found = debug.diagnose(HOST, log, cluster=None)
    assert all(op.value != "ib0" for c in found.candidates for op in c.ops)


def test_an_unhandled_system_error_without_a_scheduler_asks_for_the_shared_interface():
    found = debug.diagnose(HOST, "[rank3]: RuntimeError: NCCL error in: c10d/NCCL.cpp:1970, unhandled system error\n", None)
    top = found.candidates[0]
    assert ops_of(top) == [{"op": "export_env", "name": "NCCL_SOCKET_IFNAME", "value": "<socket_ifname>"}]
    assert top.find["socket_ifname"].startswith("ip -o -4 addr show")
    assert [c.ops[0].name for c in found.candidates] == ["NCCL_SOCKET_IFNAME", "NCCL_DEBUG"]


def test_under_a_scheduler_the_first_step_is_nccl_debug_and_a_set_interface_is_left_alone():
    log = "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:825, unhandled system error, NCCL version 2.7.8\n"
    assert first_ops(SLURM, log) == [{"op": "export_env", "name": "NCCL_DEBUG", "value": "INFO"}]
    pinned = "export NCCL_SOCKET_IFNAME=hsn0\n" + HOST
    assert first_ops(pinned, log) == [{"op": "export_env", "name": "NCCL_DEBUG", "value": "INFO"}]


def test_rccl_and_plain_nccl_lines_are_located_without_a_python_traceback():
    for line in ("Rccl error, unhandled system error", "ncclInternalError: Internal check failed.",
                 "node7:3:3 [1] NCCL WARN socketStartConnect: Connect to 172.17.0.1<41235> failed : Connection refused"):
        failure = debug.locate(f"step 10 loss 2.3\n{line}\n")
        assert failure is not None and failure.line == line


def test_a_refused_nccl_connection_is_the_interface_class_and_gloo_gets_its_own_variable():
    refused = "NCCL WARN socketStartConnect: Connect to 172.17.0.1<41235> failed : Connection refused\n"
    assert first_ops(HOST, refused)[0]["name"] == "NCCL_SOCKET_IFNAME"
    gloo = "RuntimeError: Gloo connectFullMesh failed with [/gloo/transport/tcp/pair.cc:144] no error\n"
    assert first_ops(HOST, gloo) == [{"op": "export_env", "name": "GLOO_SOCKET_IFNAME", "value": "<socket_ifname>"}]


def test_a_graph_file_from_the_vm_image_is_unset():
    log = "ncclSystemError: System call failed\nvm:1:2 [0] NCCL INFO NCCL_GRAPH_FILE set by environment to /opt/img/graph.xml\n"
    assert first_ops(HOST, log) == [{"op": "unset_env", "name": "NCCL_GRAPH_FILE"}]


# --------------------------------------------------------------------------------------------
# Launchers, schedulers


def test_mpirun_slots_come_from_the_host_list_or_the_process_count():
    log = "There are not enough slots available in the system to satisfy the 4 slots\nthat were requested\n"
    assert first_ops("horovodrun -np 4 -H localhost python train.py\n", log) == [
        {"op": "replace_flag", "flag": "-H", "value": "localhost:4"}]  # fmt: skip
    found = debug.diagnose("mpirun -np 4 python train.py\n", log, cluster=None)
    assert ops_of(found.candidates[0]) == [{"op": "replace_flag", "flag": "-np", "value": "<slots>"}]
    assert "mpirun -np <slots> python" in found.candidates[0].script


def test_a_pbs_server_without_select_gets_ncpus_and_a_memory_to_fill_in():
    script = "#!/bin/bash\n#PBS -l select=1:ncpus=16\n#PBS -l walltime=01:00:00\nmpirun ./a.out\n"
    log = 'qsub: Error: The system doesn\'t support the use of "-l select". Please use "-l ncpus" and "-l mem" instead.\n'
    top = debug.diagnose(script, log, cluster=None).candidates[0]
    assert "#PBS -l ncpus=16\n" in top.script and "select" not in top.script
    assert {"op": "set_directive", "name": "-l mem", "value": "<mem>"} in ops_of(top)
    assert top.find["mem"].startswith("qstat -Qf")


def test_the_job_id_port_is_not_offered_to_a_launcher_that_ignores_master_port():
    log = "RuntimeError: Address already in use\n"
    assert debug.diagnose("deepspeed --num_gpus 8 train.py\n", log, cluster=None).candidates == []
    assert first_ops(SLURM, log)[0]["name"] == "MASTER_PORT"


# --------------------------------------------------------------------------------------------
# Environment: caches, containers, drivers, builds


def test_a_python_write_over_quota_moves_the_hf_cache_but_a_shell_write_is_infrastructure():
    found = debug.diagnose(HOST, "OSError: [Errno 122] Disk quota exceeded: '/home/u/.cache/x'\n", cluster=None)
    assert ops_of(found.candidates[0]) == [{"op": "export_env", "name": "HF_HOME", "value": "<cache_dir>"}]
    shell = debug.diagnose(SLURM, "tee: out.log: Disk quota exceeded\n", cluster=None)
    assert shell.candidates == [] and shell.advice.kind == "infrastructure"


def test_a_read_only_filesystem_binds_a_directory_into_the_container_or_advises():
    log = "OSError: [Errno 30] Read-only file system: '/opt/venv/cache'\n"
    boxed = "#!/bin/bash\n#SBATCH -N 1\nsrun apptainer exec --nv img.sif python run.py\n"
    assert first_ops(boxed, log) == [{"op": "add_flag", "launcher": "apptainer", "flag": "--bind", "value": "<bind_path>"}]
    bare = debug.diagnose(HOST, log, cluster=None)
    assert bare.candidates == [] and bare.advice.kind == "environment" and "HF_HOME" in bare.advice.text


def test_driver_and_glibc_mismatches_are_environment_advice_naming_what_to_load():
    driver = debug.diagnose(HOST, "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).\n", None)
    assert driver.advice.kind == "environment" and "module avail cuda" in driver.advice.text
    glibc = debug.diagnose(HOST, "ImportError: /lib64/libc.so.6: version `GLIBC_2.28' not found (required by x.so)\n", None)
    assert glibc.advice.kind == "environment" and "module spider pytorch" in glibc.advice.text
    assert glibc.matches[0].entry.id == "glibc-too-old"


def test_deepspeed_without_cuda_home_loads_modules_in_the_sites_own_naming():
    log = "deepspeed.ops.op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to compile CUDA op(s)\n"
    easybuild = "#!/bin/bash\n#SBATCH -N 1\nmodule load Stages/2024 GCC Python\nsrun python train.py\n"
    assert first_ops(easybuild, log) == [{"op": "add_module", "name": "GCC"}, {"op": "add_module", "name": "CUDA"}]
    lower = "#!/bin/bash\n#SBATCH -N 1\nmodule load gcc/12 python\nsrun python train.py\n"
    lookup = debug.diagnose(lower, log, None)  # which module to load is the site's: say how to find it
    assert lookup.candidates == [] and lookup.advice.kind == "site_value" and "module spider cuda" in lookup.advice.text
    assert debug.diagnose(HOST, log, None).advice.kind == "environment"


def test_every_variable_the_new_rules_export_passes_the_ports_value_filter():
    for name in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "HF_HOME"):
        assert edit_refusal(name, "<placeholder>") is None


def test_a_submit_filters_own_sentence_is_the_first_error_and_names_the_class():
    qsub = "qsub: submit filter returned an error code, aborting job submission.\n"
    script = "#!/bin/bash\n#PBS -q gpu\npython x.py\n"
    found = debug.diagnose(script, "You must request ngpus>=1 for queue gpu\n" + qsub, cluster=None)
    assert found.failure.line_no == 1 and found.matches[0].entry.id == "pbs-submit-filter-rejected"
    # No error words: the refusal's line is found, and the filter's sentence before it is its reason.
    terse = debug.diagnose(script, "queue gpu: no GPU in request\n" + qsub, cluster=None)
    assert terse.failure.line_no == 1 and terse.matches[0].entry.id == "pbs-submit-filter-rejected"
    after_output = debug.diagnose(script, "loading modules\n\n" + qsub, cluster=None)  # a blank line ends the reason
    assert after_output.failure.line_no == 3


def test_torchelastics_json_header_is_skipped_for_the_error_it_records():
    log = ('ERROR:torch.distributed.elastic.multiprocessing.errors.error_handler:{\n  "message": {\n'
           '    "message": "RendezvousConnectionError: The connection to the C10d store has failed.",\n')  # fmt: skip
    assert "RendezvousConnectionError" in debug.locate(log).line


# --------------------------------------------------------------------------------------------
# Wordings of known classes: wrapped lines, HIP's and cuDNN's own messages


def first_entry(script: str, log: str) -> str:
    found = debug.diagnose(script, log, cluster=None)
    return found.matches[0].entry.id if found.matches and found.matches[0].kind == "exact" else ""


def test_wordings_of_known_classes_are_recognised():
    wrapped = "srun: error: Unable to create step for job 77: Invalid generic\n      resource (gres) specification\n"
    assert first_entry("srun --overlap --pty bash\n", wrapped) == "slurm-invalid-gres"
    assert first_entry(SLURM, "HIP error: no ROCm-capable device is detected\n") == "no-cuda-gpus-visible"
    busy = "cudaMalloc failed: CUDA-capable device(s) is/are busy or unavailable\n"
    assert first_entry("srun -n 9 ./app\n", busy) == "invalid-device-ordinal"
    assert first_entry(SLURM, "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory\n") \
        == "cuda-runtime-library-version-missing"
    # The driver's library is another class: no GPU on the node.
    assert first_entry(SLURM, "OSError: libcuda.so.1: cannot open shared object file\n") == "libcuda-missing-no-gpu"


def test_a_step_waiting_for_resources_and_a_whole_gpu_binding_are_advice_not_edits():
    for log in ("srun: Job 5 step creation temporarily disabled, retrying (Requested nodes are busy)\n",
                "launch failed on x1000c0s0b0n0: Failed to parse implicit GPU selection\n"):
        found = debug.diagnose(SLURM, log, cluster=None)
        assert found.failure.category == "launcher" and not found.candidates


def test_srun_inside_the_batch_container_moves_the_environment_to_the_step():
    script = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --environment=ngc.toml\nsrun python train.py\n"
    log = "srun: error: plugin_load_from_file: dlopen(/usr/lib/slurm/mpi_pmix.so): libpmix.so.2: cannot open shared object file\n"
    assert first_ops(script, log) == [{"op": "remove_directive", "name": "--environment"},
                                      {"op": "add_flag", "launcher": "srun", "flag": "--environment", "value": "ngc.toml"}]
    # A container started some other way: advice, no edit.
    assert first_ops("#!/bin/bash\n#SBATCH -N 1\nsrun python train.py\n", log) == []


def test_a_master_address_with_no_route_is_a_hostname_on_the_wrong_network():
    log = "RuntimeError: The client socket has failed to connect to node7.mgmt:29500 (errno: 113 - No route to host).\n"
    assert first_entry(SLURM, log) == "torch-master-addr-unroutable"


def test_a_submit_filter_requiring_gres_gets_the_gpu_request_with_the_count_to_find():
    script = "#!/bin/bash\n#SBATCH --partition=gpu\n#SBATCH --nodes=1\nsrun python train.py\n"
    found = debug.diagnose(script, "When requesting resources from GPU partitions, users must specify `--gres`.\n", None)
    top = found.candidates[0]
    assert ops_of(top) == [{"op": "set_directive", "name": "--gres", "value": "gpu:<gpus>"}]
    assert top.cause == "gpu_request_invalid" and "sinfo" in top.find["gpus"]


STEP_GRES = "srun: error: Unable to create step for job 88: Invalid generic resource (gres) specification\n"


def test_a_step_refused_its_gres_names_the_gpus_on_the_step():
    attach = "srun --jobid=88 --overlap --pty bash\n"
    assert first_ops(attach, STEP_GRES) == [{"op": "add_flag", "launcher": "srun", "flag": "--gpus", "value": "<gpus>"}]
    assert first_ops("srun -p dev --gpus=4 -w n1 --pty bash\n", STEP_GRES) == [
        {"op": "add_flag", "launcher": "srun", "flag": "--gres", "value": "gpu:4"}]
    # A batch job's own directives are not a step's: no step edit.
    assert first_ops("#!/bin/bash\n#SBATCH --gres=gpu:a100:9\nsrun python t.py\n", STEP_GRES.replace("create step", "allocate")) == []


def test_a_fix_may_extend_the_loader_path_only_with_the_jobs_own_library_variables():
    # Ports still drop LD_LIBRARY_PATH; a known fix may add $LIBRARY_PATH or $CONDA_PREFIX/lib,
    # never a literal directory nor a path that drops the loader's own.
    assert edit_refusal("LD_LIBRARY_PATH", "$LD_LIBRARY_PATH:$LIBRARY_PATH") is None
    assert edit_refusal("LD_LIBRARY_PATH", "${CONDA_PREFIX}/lib:${LD_LIBRARY_PATH}") is None
    for value in ("/opt/evil:$LD_LIBRARY_PATH", "$LIBRARY_PATH", "$LD_LIBRARY_PATH:$HOME/lib",
                  "${CONDA_PREFIX/lib:$LD_LIBRARY_PATH}", "$LD_LIBRARY_PATH:$(touch x)"):
        assert edit_refusal("LD_LIBRARY_PATH", value), value
    assert edit_refusal("LD_PRELOAD", "$LD_LIBRARY_PATH")


def test_an_old_system_libstdcxx_puts_the_activated_conda_environments_first_else_the_modules():
    log = "ImportError: /lib64/libstdc++.so.6: version `GLIBCXX_3.4.29' not found (required by x.so)\n"
    conda = "#!/bin/bash\n#SBATCH -N 1\nmodule load anaconda\nconda activate env\nsrun python t.py\n"
    patched = debug.diagnose(conda, log, cluster=None).candidates[0].script
    assert "conda activate env\nexport LD_LIBRARY_PATH=$CONDA_PREFIX/lib:$LD_LIBRARY_PATH\nsrun python t.py\n" in patched
    extend = {"op": "export_env", "name": "LD_LIBRARY_PATH", "value": "$LD_LIBRARY_PATH:$LIBRARY_PATH"}
    with_compiler = SLURM.replace("srun", "module load gcc/13\nsrun")
    assert first_ops(with_compiler, log) == [extend]
    # No compiler module loaded by the job: load the site's gcc as well.
    assert first_ops(SLURM, log.replace("GLIBCXX_3.4.29", "CXXABI_1.3.8")) == [{"op": "add_module", "name": "gcc"}, extend]
