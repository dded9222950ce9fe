"""Runtime failures of training jobs the debug agent knows since issue 18's third round: Hugging Face
Hub authentication and caches, GPU code built for other GPUs or CUDA versions, shared memory, Intel
GPU (Level Zero) results, container loop devices, and Slurm refusals that are the site's. Each test
pairs a job script of the kind that fails so with a log written for the test."""

import pytest

from maple_ci import debug

SLURM_HF = """#!/bin/bash
#SBATCH --job-name=sft-llama
#SBATCH --nodes=1
#SBATCH --gpus-per-node=4
#SBATCH --time=04:00:00
module load pytorch/2.4
srun torchrun --nproc_per_node=4 finetune.py --model meta-llama/Llama-3.1-8B
"""

PBS_AURORA = """#!/bin/bash
#PBS -A MyProject
#PBS -q prod
#PBS -l select=2
#PBS -l walltime=02:00:00
#PBS -l filesystems=home:flare
module load frameworks
cd $PBS_O_WORKDIR
mpiexec -n 24 --ppn 12 python train_xpu.py --batch-size 64
"""

SLURM_APPTAINER = """#!/bin/bash
#SBATCH --nodes=1
#SBATCH --gres=gpu:2
#SBATCH --mem=120G
srun apptainer exec --nv $HOME/images/pt.sif python train.py --workers 16
"""


def diagnose(script: str, log: str):
    return debug.diagnose(script, log, cluster=None)


def entry_ids(found) -> list[str]:
    return [m.entry.id for m in found.matches]


def assert_advice(found, entry: str, kind: str) -> None:
    """The first known case is `entry`, and its answer is advice of `kind`, no edit."""
    assert entry_ids(found)[0] == entry
    assert found.candidates == [] and found.advice.kind == kind


def first_ops(found) -> list[dict]:
    return [op.model_dump() for op in found.candidates[0].ops] if found.candidates else []


# --------------------------------------------------------------------------------------------
# Hugging Face Hub


def test_a_gated_model_without_a_token_is_advice_to_log_in_never_a_token_in_the_script():
    log = ("Loading checkpoint shards from the hub\n"
           "huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-6a0f)\n\n"
           "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json.\n")  # fmt: skip
    found = diagnose(SLURM_HF, log)
    assert_advice(found, "hf-gated-repo", "environment")
    assert "huggingface-cli login" in found.advice.text and "HF_HOME" in found.advice.text
    pending = "huggingface_hub.errors.GatedRepoError: 403 Client Error. Your request to access model x/y is awaiting a review\n"
    assert entry_ids(diagnose(SLURM_HF, pending))[0] == "hf-gated-repo"


def test_an_unwritable_hub_cache_moves_hf_home_unless_the_script_sets_it():
    log = "PermissionError: [Errno 13] Permission denied: '/home/jdoe/.cache/huggingface/hub/models--gpt2'\n"
    found = diagnose(SLURM_HF, log)
    assert entry_ids(found)[0] == "hf-cache-permission-denied"
    assert first_ops(found) == [{"op": "export_env", "name": "HF_HOME", "value": "<cache_dir>"}]
    assert found.advice.kind == "site_value" and "$SCRATCH" in found.candidates[0].find["cache_dir"]
    shared = SLURM_HF.replace("module load", "export HF_HOME=/projects/nlp/hf_cache\nmodule load")
    kept = diagnose(shared, log)
    assert kept.candidates == [] and kept.advice.kind == "environment"


def test_a_home_of_slash_moves_every_cache_with_xdg_cache_home():
    found = diagnose(SLURM_APPTAINER, "PermissionError: [Errno 13] Permission denied: '/.cache'\n")
    assert entry_ids(found)[0] == "hf-cache-permission-denied"
    assert first_ops(found) == [{"op": "export_env", "name": "XDG_CACHE_HOME", "value": "<cache_dir>"}]


def test_a_permission_error_on_other_files_is_not_the_hub_cache():
    for path in ("/scratch/jdoe/run7/ckpt/step_100.pt", "/home/jdoe/.cache/torch/kernels"):
        log = f"PermissionError: [Errno 13] Permission denied: '{path}'\n"
        assert "hf-cache-permission-denied" not in entry_ids(diagnose(SLURM_HF, log))


def test_a_read_only_hub_cache_outside_a_container_moves_hf_home_inside_one_binds():
    log = "OSError: [Errno 30] Read-only file system: '/home/jdoe/.cache/huggingface/hub/.locks'\n"
    outside = diagnose(SLURM_HF, log)
    assert entry_ids(outside)[0] == "read-only-filesystem-write"
    assert first_ops(outside) == [{"op": "export_env", "name": "HF_HOME", "value": "<cache_dir>"}]
    inside = diagnose(SLURM_APPTAINER, log)
    assert [c.ops[0].op for c in inside.candidates] == ["add_flag"]  # --bind only
    other = "OSError: [Errno 30] Read-only file system: '/opt/app/outputs/metrics.json'\n"
    assert diagnose(SLURM_HF, other).candidates == []


# --------------------------------------------------------------------------------------------
# GPU code for other GPUs or CUDA versions


def test_no_kernel_image_from_torch_is_environment_advice_naming_the_arch_list():
    log = ("/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:230: UserWarning:\n"
           "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
           "CUDA kernel errors might be asynchronously reported at some other API call\n")  # fmt: skip
    found = diagnose(SLURM_HF, log)
    assert_advice(found, "cuda-no-kernel-image", "environment")
    assert "TORCH_CUDA_ARCH_LIST" in found.advice.text
    jax = "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: no kernel image is available for execution on the device\n"
    assert entry_ids(diagnose(SLURM_HF, jax)) == ["jax-no-kernel-image"]


def test_torchvision_built_for_another_cuda_is_a_reinstall_not_an_edit():
    log = ("  File \"/home/jdoe/.local/lib/python3.11/site-packages/torchvision/extension.py\", line 80, in _check_cuda_version\n"
           "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA major versions. "
           "PyTorch has CUDA Version=12.4 and torchvision has CUDA Version=11.8.\n")  # fmt: skip
    found = diagnose(SLURM_HF, log)
    assert_advice(found, "torchvision-cuda-mismatch", "environment")


# --------------------------------------------------------------------------------------------
# Shared memory


DATALOADER_BUS = ("Epoch 3:  41%|####      | 812/1980\n"
                  "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
                  "RuntimeError: DataLoader worker (pid 20417) is killed by signal: Bus error. It is possible that "
                  "dataloader's workers are out of shared memory.\n")  # fmt: skip


def test_dataloader_bus_error_under_docker_runs_it_with_the_hosts_ipc_else_is_the_programs():
    docker = "#!/bin/bash\n#SBATCH --gres=gpu:1\ndocker run --gpus all -v $PWD:/w nvcr.io/nvidia/pytorch:24.05-py3 python /w/train.py\n"
    found = diagnose(docker, DATALOADER_BUS)
    assert entry_ids(found)[0] == "dataloader-shm-bus-error"
    assert first_ops(found) == [{"op": "replace_text", "old": "docker run", "new": "docker run --ipc=host"}]
    sized = docker.replace("docker run", "docker run --shm-size=16g")
    assert diagnose(sized, DATALOADER_BUS).advice.kind == "user_code"
    apptainer = diagnose(SLURM_APPTAINER, DATALOADER_BUS)
    assert apptainer.candidates == [] and apptainer.advice.kind == "user_code"
    assert "num_workers" in apptainer.advice.text


def test_a_plain_bus_error_is_the_programs_with_shared_memory_first_to_check():
    log = "/var/spool/slurmd/job5521/slurm_script: line 5: 88213 Bus error               (core dumped) python train.py\n"
    found = diagnose(SLURM_APPTAINER, log)
    assert entry_ids(found)[0] == "sigbus-core-dumped"
    assert found.advice.kind == "user_code" and "/dev/shm" in found.advice.text


# --------------------------------------------------------------------------------------------
# Intel GPUs (Level Zero)


def test_level_zero_out_of_device_memory_is_the_programs_batch():
    log = ("[rank5]: Traceback (most recent call last):\n"
           "[rank5]:   File \"/lus/flare/projects/MyProject/train_xpu.py\", line 212, in <module>\n"
           "[rank5]: RuntimeError: level_zero backend failed with error: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)\n")  # fmt: skip
    found = diagnose(PBS_AURORA, log)
    assert entry_ids(found)[0] == "level-zero-out-of-device-memory"
    assert found.advice.kind == "user_code" and "train_xpu.py:212" in found.advice.text


@pytest.mark.parametrize("log, entry, kind, says", [
    # A lost device is the node, with memory as the other suspect.
    ("x4102c5s2b0n0: RuntimeError: level_zero backend failed with error: 20 (UR_RESULT_ERROR_DEVICE_LOST)\n",
     "level-zero-device-lost", "infrastructure", "smaller batch"),
    # An uninitialised Level Zero is where the job runs, not the script.
    ("Traceback (most recent call last):\n  File \"/home/jdoe/bench/probe.py\", line 4, in <module>\n"
     "RuntimeError: zeInit failed: ZE_RESULT_ERROR_UNINITIALIZED\n", "level-zero-uninitialized", "environment", "sycl-ls"),
    # A module build failure is a library built for another GPU.
    ("Level-Zero error: zeModuleCreate returned ZE_RESULT_ERROR_MODULE_BUILD_FAILURE on Intel(R) Data Center GPU Max 1550\n",
     "level-zero-module-build-failure", "environment", ""),
])  # fmt: skip
def test_level_zero_results_that_are_not_the_programs_get_advice_of_their_kind(log, entry, kind, says):
    found = diagnose(PBS_AURORA, log)
    assert_advice(found, entry, kind)
    assert says in found.advice.text


# --------------------------------------------------------------------------------------------
# Containers and Slurm refusals that are the site's


def test_no_free_loop_device_is_the_node_with_a_sandbox_as_the_way_around():
    log = ("FATAL:   container creation failed: mount /proc/self/fd/3->/var/apptainer/mnt/session/rootfs error: "
           "while mounting image /proc/self/fd/3: failed to find loop device: could not attach image file to loop device: "
           "no loop devices available\nsrun: error: gpu044: task 0: Exited with exit code 255\n")  # fmt: skip
    found = diagnose(SLURM_APPTAINER, log)
    assert_advice(found, "apptainer-no-loop-device", "infrastructure")
    assert "--sandbox" in found.advice.text and "max loop devices" in found.advice.text


def test_a_task_launch_refused_for_the_node_name_is_that_node():
    log = ("srun: error: Task launch for StepId=4417.0 failed on node nid002: Invalid node name specified\n"
           "srun: error: Application launch failed: Invalid node name specified\n")  # fmt: skip
    found = diagnose(SLURM_HF, log)
    assert_advice(found, "slurm-task-launch-invalid-node", "infrastructure")
    assert "--exclude=nid002" in found.advice.text
    # A node list the user wrote is refused at submission, not at task launch: not this case.
    assert "slurm-task-launch-invalid-node" not in entry_ids(
        diagnose(SLURM_HF, "sbatch: error: Batch job submission failed: Invalid node name specified\n"))


def test_access_denied_at_submission_points_at_the_sites_rules_not_at_a_wait():
    log = ("sbatch: error: Allocation in partition GPU must request all resources, gpu count 1 is low\n"
           "sbatch: error: Batch job submission failed: Access/permission denied\n")  # fmt: skip
    found = diagnose(SLURM_HF, log)
    assert "slurm-submit-access-denied" in entry_ids(found)
    assert found.candidates == [] and found.advice.kind == "infrastructure"
    assert "sacctmgr show assoc" in found.advice.text and "login node" in found.advice.text
    assert "wait until" not in found.advice.text
