"""Known cases for MPI and DeepSpeed launch failures (issue 18): Hydra given a program it cannot
exec, Open MPI under srun without a matching PMI, Slurm's PMIx plugin refusing a foreign
collective, DeepSpeed ops that fail to compile, and the older wording of NCCL's watchdog timeout.
Scripts and logs are written for these tests, in the shape the centers' jobs have."""

from maple_ci import debug
from maple_ci.debug.kb import exact_hits

TORQUE_MPICH = """#!/bin/bash
#PBS -N sweep
#PBS -l nodes=2:ppn=4
#PBS -l walltime=02:00:00
cd $PBS_O_WORKDIR
module load mpich/4.1.2 python/3.11
mpiexec -np 8 -f $PBS_NODEFILE train.py --epochs 5
"""

SLURM_OMPI = """#!/bin/bash
#SBATCH --job-name=md
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=32
#SBATCH --time=04:00:00
module load gcc/12.2 openmpi/4.1.5
srun ./md_solver input.nml
"""

SLURM_DS = """#!/bin/bash
#SBATCH --nodes=1
#SBATCH --gres=gpu:4
#SBATCH --time=12:00:00
module load gcc/11.3.0 anaconda3
source activate llm
deepspeed --num_gpus 4 finetune.py --deepspeed ds_zero2.json
"""


def diagnosed(script: str, log: str):
    found = debug.diagnose(script, log, cluster=None)
    return found, [m.entry.id for m in found.matches]


def ops_of(candidate) -> list[dict]:
    return [op.model_dump() for op in candidate.ops]


# --------------------------------------------------------------------------------------------
# MPICH/Hydra: the program is exec'd as given


def test_hydra_given_the_python_file_itself_gets_the_interpreter_in_front_of_it():
    log = ("Running on cn031 cn032\n"
           "[proxy:0:0@cn031] HYDU_create_process (lib/utils/launch.c:114): execvp error on file train.py (Permission denied)\n"
           "[proxy:0:1@cn032] HYDU_create_process (lib/utils/launch.c:114): execvp error on file train.py (Permission denied)\n")  # fmt: skip
    found, ids = diagnosed(TORQUE_MPICH, log)
    assert ids[0] == "hydra-execvp-program"
    top = found.candidates[0]
    assert ops_of(top) == [{"op": "replace_text", "old": "mpiexec -np 8 -f $PBS_NODEFILE train.py",
                            "new": "mpiexec -np 8 -f $PBS_NODEFILE python3 train.py"}]  # fmt: skip
    assert "mpiexec -np 8 -f $PBS_NODEFILE python3 train.py --epochs 5" in top.script


def test_hydra_missing_binary_or_a_file_the_script_does_not_launch_is_advice_not_an_edit():
    binary = "[proxy:0:0@cn031] HYDU_create_process (utils/launch/launch.c:75): execvp error on file md_solver (No such file or directory)\n"
    found, ids = diagnosed(TORQUE_MPICH, binary)
    assert ids == ["hydra-execvp-program"] and found.candidates == []
    assert found.advice.kind == "environment" and "chmod +x" in found.advice.text
    # The message names another Python file than the one the launch line runs: nothing to edit.
    other = "[proxy:0:0@cn031] HYDU_create_process (lib/utils/launch.c:114): execvp error on file prep.py (Permission denied)\n"
    assert debug.diagnose(TORQUE_MPICH, other, None).candidates == []


# --------------------------------------------------------------------------------------------
# Open MPI under srun, Slurm's PMIx plugin


def test_open_mpi_direct_launch_without_pmi_is_advice_naming_the_plugin_checks():
    log = ("[c104:88213] OPAL ERROR: Not initialized in file pmix2x_client.c at line 109\n"
           "--------------------------------------------------------------------------\n"
           "The application appears to have been direct launched using \"srun\",\n"
           "but OMPI was not built with SLURM's PMI support and therefore cannot\n"
           "execute. There are several options for building PMI support under\n"
           "srun: error: c104: task 0: Exited with exit code 1\n")  # fmt: skip
    found, ids = diagnosed(SLURM_OMPI, log)
    assert ids[0] == "ompi-srun-without-pmi" and found.candidates == []
    assert found.advice.kind == "environment"
    assert "srun --mpi=list" in found.advice.text and "ompi_info" in found.advice.text


def test_open_mpis_pmi2_failure_is_the_same_case_in_either_spelling():
    for spelling in ("intialize", "initialize"):
        text = f"PMI2_Init failed to {spelling}.  Return code: 14\n"
        assert [h.entry.id for h in exact_hits(text, None, None, [])] == ["ompi-srun-without-pmi"]


def test_a_pmix_collective_slurm_does_not_own_is_advice_to_use_the_mpis_launcher():
    log = ("srun: error: mpi/pmix_v4: pmixp_coll_belong_chk: gpu-b12 [1]: pmixp_coll.c:280: "
           "No process controlled by this slurmstepd is involved in this collective.\n"
           "srun: error: mpi/pmix_v4: _process_server_request: gpu-b12 [1]: pmixp_server.c:923: Unable to pmixp_state_coll_get()\n")  # fmt: skip
    found, ids = diagnosed(SLURM_OMPI.replace("srun ", "srun --mpi=pmix "), log)
    assert ids == ["slurm-pmix-foreign-collective"] and found.candidates == []
    assert found.advice.kind == "environment" and "mpiexec" in found.advice.text


# --------------------------------------------------------------------------------------------
# DeepSpeed's just-in-time op builds

BUILD_HEAD = (
    "Using /home/jdoe/.cache/torch_extensions/py311_cu121 as PyTorch extensions root...\n"
    "Emitting ninja build file /home/jdoe/.cache/torch_extensions/py311_cu121/fused_adam/build.ninja...\n"
    "Building extension module fused_adam...\n"
)
BUILD_TAIL = (
    "ninja: build stopped: subcommand failed.\n"
    "[rank0]: Traceback (most recent call last):\n"
    "[rank0]:   File \"/opt/envs/llm/lib/python3.11/site-packages/torch/utils/cpp_extension.py\", line 2104, in _run_ninja_build\n"
    "[rank0]:     subprocess.run(\n"
    "[rank0]: subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.\n"
    "[rank0]: RuntimeError: Error building extension 'fused_adam'\n"
)  # fmt: skip


def test_an_op_build_without_nvcc_asks_for_the_sites_cuda_module():
    log = BUILD_HEAD + "FAILED: multi_tensor_adam.cuda.o\n/bin/sh: 1: /usr/local/cuda/bin/nvcc: not found\n" + BUILD_TAIL
    found, ids = diagnosed(SLURM_DS, log)
    assert ids[0] == "deepspeed-op-build-failed"
    # The module's name is the site's: the command that finds it, no edit with a guessed name.
    assert found.candidates == [] and found.advice.kind == "site_value"
    assert "module spider cuda" in found.advice.text
    # A script that loads CUDA already failed for another reason: no lookup for a second one.
    loaded = debug.diagnose(SLURM_DS.replace("anaconda3", "anaconda3 cuda/12.1"), log, None)
    assert loaded.advice.kind == "environment"


def test_an_unwritable_extension_cache_moves_to_a_writable_directory_once():
    log = (BUILD_HEAD + "OSError: [Errno 30] Read-only file system: '/home/jdoe/.cache/torch_extensions/py311_cu121/fused_adam'\n"
           + BUILD_TAIL)  # fmt: skip
    found, _ = diagnosed(SLURM_DS, log)
    assert {"op": "export_env", "name": "TORCH_EXTENSIONS_DIR", "value": "<cache_dir>"} in [
        op for c in found.candidates for op in ops_of(c)
    ]
    pinned = SLURM_DS.replace("source activate", "export TORCH_EXTENSIONS_DIR=$SCRATCH/ext\nsource activate")
    assert all(op.name != "TORCH_EXTENSIONS_DIR" for c in debug.diagnose(pinned, log, None).candidates for op in c.ops)


def test_a_compiler_error_maple_cannot_place_is_environment_advice_with_the_prebuilt_route():
    log = (BUILD_HEAD + "FAILED: multi_tensor_adam.cuda.o\n"
           "csrc/adam/multi_tensor_adam.cu(87): error: identifier \"__hmax2\" is undefined\n" + BUILD_TAIL)  # fmt: skip
    found, ids = diagnosed(SLURM_DS, log)
    assert ids == ["deepspeed-op-build-failed"] and found.candidates == []
    assert found.advice.kind == "environment" and "DS_BUILD_OPS=1" in found.advice.text


# --------------------------------------------------------------------------------------------
# NCCL's watchdog in torch's older log format


def test_the_watchdog_timeout_without_a_date_in_its_prefix_is_the_known_nccl_timeout():
    # torch before 2.2 prints "[E ProcessGroupNCCL.cpp:563]" with no date; the pattern reads both.
    text = ("[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=48211, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600417 milliseconds before timing out.\n")  # fmt: skip
    assert [h.entry.id for h in exact_hits(text, None, None, [])] == ["nccl-collective-timeout"]


def test_pdsh_failing_to_reach_a_node_is_advice_on_ssh_or_another_launcher():
    script = ("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:4\nscontrol show hostnames | sed 's/$/ slots=4/' > hosts\n"
              "deepspeed --hostfile hosts train.py --deepspeed cfg.json\n")
    log = "[2026-11-28 09:00:01] [INFO] [runner.py:555:main] cmd = pdsh -S -f 1024 -w gpu-a01,gpu-a02 ...\npdsh@gpu-a01: gpu-a02: ssh exited with exit code 255\n"
    found = debug.diagnose(script, log, None)
    assert [m.entry.id for m in found.matches][:1] == ["deepspeed-pdsh-ssh-failed"] and found.candidates == []
    assert found.advice.kind == "environment" and "--launcher" in found.advice.text
