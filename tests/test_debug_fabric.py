"""Network and fabric failures whose message names the cause (issue 18): Slingshot/CXI, UCX,
Gloo, NCCL, the rendezvous address, and logs whose every line carries a logger's prefix. Inputs
are written in styles the benchmark cases do not use."""

from maple_ci.debug import diagnose

SLURM = "#!/bin/bash\n#SBATCH -N 4\n#SBATCH --ntasks-per-node=64\nsrun ./app\n"


def top_ops(script: str, log: str) -> list[tuple]:
    found = diagnose(script, log, None)
    return [(op.op, getattr(op, "name", ""), getattr(op, "value", "")) for op in found.candidates[0].ops] if found.candidates else []


def test_cxi_asking_for_software_matching_gets_it_unless_the_script_sets_a_mode():
    log = ("17: libfabric:9:1700000000:cxi:core:cxip_ux_onload_cb():2444<warn> RXC (0x1:2:0): Flow control triggered "
           "due to failure to append LE. Software endpoint mode required.\n17: Program received signal SIGABRT\n")
    assert top_ops(SLURM, log) == [("export_env", "FI_CXI_RX_MATCH_MODE", "software")]
    assert top_ops(SLURM.replace("srun", "export FI_CXI_RX_MATCH_MODE=hybrid\nsrun"), log) == []


def test_a_one_node_job_without_a_vni_asks_for_one_and_a_bigger_job_does_not():
    log = "libfabric: cxi: fi_domain failed\ncxip_gen_auth_key failed: -38\n"
    one = SLURM.replace("-N 4", "--nodes=1")
    assert top_ops(one, log) == [("set_directive", "--network", "single_node_vni")]
    assert top_ops(SLURM, log) == []


def test_ucx_on_loopback_names_the_routable_interface_as_a_value_to_find():
    log = "[17000.1] [n1:9:0] sock.c:278 UCX ERROR connect(fd=9, dest_addr=127.0.1.1:41000) failed: Connection refused\n"
    found = diagnose("mpirun -x UCX_TLS=tcp -np 2 ./osu_bw\n", log, None)
    assert found.candidates[0].ops[0].name == "UCX_NET_DEVICES" and "ip -o -4 addr" in found.candidates[0].find["socket_ifname"]


def test_gloo_given_an_exclusion_list_gets_an_interface_name():
    script = "#!/bin/bash\nexport GLOO_SOCKET_IFNAME=^docker0,lo\ntorchrun --nnodes 2 train.py\n"
    log = "RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/device.cc:84]\n  ifa != nullptr. Unable to find address for: ^docker0\n"
    found = diagnose(script, log, None)
    assert found.failure.exception.strip().endswith("Unable to find address for: ^docker0")
    assert found.candidates[0].ops[0].name == "GLOO_SOCKET_IFNAME"


def test_a_container_images_interface_name_is_dropped_when_the_nodes_lack_it():
    script = "#!/bin/bash\n#SBATCH -N 2\nexport NCCL_SOCKET_IFNAME=ens5\nsrun python train.py\n"
    assert top_ops(script, "node1:7:7 [0] NCCL WARN Bootstrap: no socket interface found\n") == [("unset_env", "NCCL_SOCKET_IFNAME", "")]


def test_the_submit_host_as_master_address_becomes_the_jobs_first_node():
    script = "#!/bin/bash\n#SBATCH -N 2\nexport MASTER_ADDR=${SLURM_SUBMIT_HOST}\nsrun python train.py\n"
    log = "[E socket.cpp:860] [c10d] The client socket has timed out after 600s while trying to connect to (login2, 29500)\n"
    patched = diagnose(script, log, None).candidates[0].script
    assert 'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)\n' in patched


def test_a_ray_workers_logged_traceback_is_located_at_its_exception_and_a_bad_gpu_is_infrastructure():
    prefix = "(RayWorkerWrapper pid=42, ip=10.0.0.7) ERROR 11-28 10:00:00 worker_base.py:382] "
    log = "".join(prefix + line + "\n" for line in (
        '  File "/venv/lib/python3.11/site-packages/vllm/distributed/pynccl_wrapper.py", line 223, in NCCL_CHECK',
        '    raise RuntimeError(f"NCCL error: {error_str}")',
        "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"))
    found = diagnose("", log, None)
    assert found.failure.line_no == 3 and found.advice.kind == "infrastructure" and "--exclude" in found.advice.text


def test_launcher_and_runtime_lines_without_an_error_word_are_located():
    for line in ("pdsh@n1: n2: ssh exited with exit code 255", "PMI2_Init failed to intialize.  Return code: 14",
                 "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout",
                 "zeMemAllocDevice failed: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
                 "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit."):
        found = diagnose("", "step 1 ok\n" + line + "\n", None)
        assert found.failure and found.failure.line_no == 2, line


def test_a_container_without_gpu_pass_through_gets_nv_not_a_driver_upgrade():
    script = "#!/bin/bash\n#SBATCH --gpus=1\napptainer exec img.sif python infer.py\n"
    log = "Command error:\n  [info] starting\n  [error] CUDA error: CUDA driver version is insufficient for CUDA runtime version\n"
    found = diagnose(script, log, None)
    assert "CUDA driver version is insufficient" in found.failure.exception
    assert "apptainer exec --nv img.sif python infer.py" in found.candidates[0].script
    assert not diagnose(script.replace("exec img", "exec --nv img"), log, None).candidates


def test_rocm_device_selection_set_twice_keeps_rocr_and_hip_is_given_what_vllm_asks_for():
    script = "#!/bin/bash\nexport ROCR_VISIBLE_DEVICES=2\nexport CUDA_VISIBLE_DEVICES=2\npython train.py\n"
    assert top_ops(script, "RuntimeError: No HIP GPUs are available\n") == [("unset_env", "CUDA_VISIBLE_DEVICES", "")]
    vllm = "#!/bin/bash\n#SBATCH --gpus-per-node=8\nsrun vllm serve m --tensor-parallel-size 8\n"
    assert top_ops(vllm, "RuntimeError: Please use HIP_VISIBLE_DEVICES instead of ROCR_VISIBLE_DEVICES\n") == [
        ("export_env", "HIP_VISIBLE_DEVICES", "$ROCR_VISIBLE_DEVICES")]


def test_one_gpu_per_task_for_the_whole_job_becomes_the_nodes_gpus():
    script = "#!/bin/bash\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-task=1\nsrun python train.py\n"
    assert top_ops(script, "RuntimeError: CUDA error: invalid device ordinal\n") == [
        ("remove_directive", "--gpus-per-task", ""), ("set_directive", "--gpus-per-node", "4")]


def test_pyxis_read_only_root_and_full_runtime_path():
    script = "#!/bin/bash\nsrun --container-image=ubuntu:22.04 bash -c 'apt-get install -y vim'\n"
    assert top_ops(script, "E: Could not open lock file /var/lib/dpkg/lock-frontend - open (30: Read-only file system)\n") == [
        ("export_env", "ENROOT_ROOTFS_WRITABLE", "1")]
    full = diagnose(script, "slurmstepd: error: pyxis:     Write failed because No space left on device\n", None)
    assert full.advice.kind == "infrastructure" and "runtime_path" in full.advice.text


def test_a_bare_exception_reads_the_next_line_and_a_workflow_stderr_block_its_first_error():
    gloo = "RuntimeError: [enforce fail at gloo/transport/tcp/device.cc:84]\n  ifa != nullptr. Unable to find address for: ^lo\nWorker failed (ActorDiedError)\n"
    assert diagnose("", gloo, None).failure.exception.strip().startswith("ifa != nullptr")
    nextflow = "Command error:\n  [info] loading model\n  RuntimeError: CUDA error: out of memory\n"
    assert diagnose("", nextflow, None).failure.exception.strip() == "RuntimeError: CUDA error: out of memory"
