"""Extraction agent: scripts in the forms the centres document, requests in words, bad input."""

import os
import re
from pathlib import Path

import pytest
import yaml

from maple_ci.errors import MapleError
from maple_ci.extract import (
    MAX_SOURCE_BYTES,
    extract,
    extract_request,
    extract_script,
    load_source,
    pbs_walltime,
    slurm_walltime,
)
from maple_ci.paths import templates_dir

DATA = Path(__file__).parent / "data" / "extract"
EXAMPLES = Path(__file__).parent.parent / "examples"


def script(path: Path):
    name, text = load_source(str(path))
    return extract(text, name)


def fields(intent, *names):
    return {name: getattr(intent, name) for name in names}


COUNTS = ("launcher", "nodes", "gpus_per_node", "world_size")


# --- sample scripts modelled on the centres' documentation --------------------------------------

@pytest.mark.parametrize("filename, expected", [
    ("nersc_srun_bash_c.sbatch", dict(
        scheduler="slurm", launcher="srun", framework="pytorch", strategy="ddp", nodes=2, gpus_per_node=4,
        world_size=8, entrypoint="train.py", script_args=["--epochs", "10", "--batch-size", "64"],
        walltime="01:00:00", account="m4790_g", queue="regular", modules=["pytorch/2.8.0"],
        env={"NCCL_SOCKET_IFNAME": "hsn"}, missing=[])),
    ("nersc_shifter.sbatch", dict(
        launcher="srun", nodes=4, gpus_per_node=4, world_size=16, entrypoint="main.py",
        script_args=["--config", "cfg/vit.yaml"], walltime="00:30:00", account="m1234", queue="debug")),
    ("polaris_mpiexec.pbs", dict(
        scheduler="pbs", launcher="mpiexec", nodes=2, gpus_per_node=4, world_size=8, entrypoint="train.py",
        script_args=["--lr", "0.001"], walltime="01:00:00", account="datascience", queue="debug-scaling",
        modules=["conda"], python_env="conda activate",
        env={"NCCL_NET_GDR_LEVEL": "PHB", "NCCL_CROSS_NIC": "1", "OMP_NUM_THREADS": "8"})),
    ("polaris_torchrun_container.pbs", dict(
        launcher="torchrun", nodes=16, gpus_per_node=4, world_size=64, entrypoint="train.py",
        script_args=["--data", "/eagle/data"], walltime="03:00:00", queue="prod")),
    ("aurora_mpiexec.pbs", dict(
        launcher="mpiexec", nodes=2, gpus_per_node=12, world_size=24, walltime="00:30:00",
        modules=["frameworks"], env={"CCL_PROCESS_LAUNCHER": "pmix", "CCL_ATL_TRANSPORT": "mpi",
                                     "CCL_KVS_MODE": "mpi", "FI_MR_CACHE_MONITOR": "userfaultfd"})),
    ("frontier_srun.sbatch", dict(
        launcher="srun", nodes=2, gpus_per_node=8, world_size=16, entrypoint="train.py",
        script_args=["--model", "resnet50"], account="CSC123", queue="batch",
        python_env="conda activate /lustre/orion/csc123/proj-shared/envs/torch",
        env={"LD_LIBRARY_PATH": "$CRAY_LD_LIBRARY_PATH:$LD_LIBRARY_PATH",
             "MIOPEN_USER_DB_PATH": "/tmp/miopen-$USER", "MIOPEN_CUSTOM_CACHE_DIR": "/tmp/miopen-$USER",
             "PYTHONUNBUFFERED": "1"})),  # python3 -u, carried as the variable python reads for it
    ("delta_srun_torchrun.sbatch", dict(
        launcher="torchrun", nodes=2, gpus_per_node=4, world_size=8, account="bbka-delta-gpu",
        queue="gpuA100x4", modules=["anaconda3_gpu", "nccl"], script_args=["--epochs", "5"])),
    ("ls6_ibrun_wrapper.sbatch", dict(  # run.sh lies next to it: followed, $2 is the node count
        launcher="torchrun", nodes=2, gpus_per_node=3, world_size=6, entrypoint="train.py",
        script_args=["--epochs", "4"], strategy="ddp", missing=[])),
    ("vista_mpirun_torchrun.sbatch", dict(
        launcher="torchrun", nodes=2, gpus_per_node=1, world_size=2, script_args=["--bf16"],
        python_env="source $SCRATCH/venvs/torch/bin/activate", account=None, queue="gh")),
    ("deepspeed_polaris.pbs", dict(
        launcher="deepspeed", framework="deepspeed", strategy="zero2", nodes=16, gpus_per_node=4,
        world_size=64, configs={"deepspeed": "ds_config.json"}, python_env="conda activate base",
        script_args=["--deepspeed", "--deepspeed_config", "ds_config.json"])),
    ("accelerate_fsdp.sbatch", dict(
        launcher="accelerate", framework="accelerate", strategy="fsdp", nodes=2, gpus_per_node=4,
        world_size=8, entrypoint="run_clm.py", walltime="36:00:00", queue="gpu",
        env={"HF_HOME": "$SCRATCH/hf"}, python_env="source ~/venvs/hf/bin/activate")),
    ("accelerate_configfile.sh", dict(
        scheduler="none", launcher="accelerate", strategy="zero3", nodes=1, gpus_per_node=4, world_size=4,
        configs={"accelerate": "accelerate_config.yaml"})),
    ("megatron_pretrain.sbatch", dict(
        framework="megatron", strategy="3d", launcher="srun", nodes=4, gpus_per_node=8, world_size=32,
        walltime="48:00:00", entrypoint="pretrain_gpt.py",
        script_args=["--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2",
                     "--num-layers", "24", "--hidden-size", "1024"])),  # as bash passes them
    ("unsupported_constructs.sh", dict(
        launcher="torchrun", nodes=1, gpus_per_node=4, world_size=4, entrypoint="-m mypkg.train",
        script_args=["--lr", "0.01"])),  # the case's default branch: the last value assigned
])
def test_sample_scripts(filename, expected):
    intent = script(DATA / filename)
    assert fields(intent, *expected) == expected


def test_wrapper_script_not_given_keeps_what_is_known():
    intent = extract_script((DATA / "ls6_ibrun_wrapper.sbatch").read_text())  # no folder: run.sh unseen
    assert fields(intent, *COUNTS, "entrypoint", "strategy", "missing") == dict(
        launcher="ibrun", nodes=2, gpus_per_node=None, world_size=None, entrypoint="./run.sh", strategy="ddp",
        missing=[])  # only the program is required: the port uses every device of the target
    assert intent.script_args == ["$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)", "2"]


def test_wrapper_run_with_bash_is_followed(tmp_path):
    (tmp_path / "launch.sh").write_text('#!/bin/bash\nexport NCCL_DEBUG=INFO\ntorchrun --nnodes=$1 --nproc_per_node=$2 "$3"\n')
    intent = extract_script("#SBATCH -N 2 --ntasks-per-node=1\nsrun bash launch.sh 2 4 train.py\n", base_dir=tmp_path)
    assert fields(intent, *COUNTS, "entrypoint", "env") == dict(
        launcher="torchrun", nodes=2, gpus_per_node=4, world_size=8, entrypoint="train.py", env={"NCCL_DEBUG": "INFO"})


def test_perlmutter_example_is_recognised_and_complete():
    intent = script(EXAMPLES / "perlmutter_torchrun_ddp.sbatch")
    assert intent.source_cluster == "perlmutter"
    assert fields(intent, *COUNTS, "strategy", "queue", "missing") == dict(
        launcher="torchrun", nodes=2, gpus_per_node=4, world_size=8, strategy="ddp", queue="regular", missing=[])
    assert intent.script_args[:2] == ["--epochs", "10"]
    assert intent.env["NCCL_SOCKET_IFNAME"] == "hsn" and "MASTER_ADDR" not in intent.env


@pytest.mark.parametrize("path", sorted(p for p in EXAMPLES.iterdir() if p.suffix != ".json"), ids=lambda p: p.name)
def test_every_shipped_example_extracts_without_gaps(path):
    intent = script(path)
    assert intent.missing == [] and intent.world_size == intent.nodes * intent.gpus_per_node


# --- directives -----------------------------------------------------------------------------

SLURM_HEAD = "#!/bin/bash\n"


@pytest.mark.parametrize("directives, expected", [
    ("#SBATCH -N 2", dict(nodes=2)),
    ("#SBATCH --nodes=3", dict(nodes=3)),
    ("#SBATCH --nodes 4", dict(nodes=4)),
    ("#SBATCH -N2", dict(nodes=2)),
    ("#SBATCH -N 2-4", dict(nodes=None)),  # a range is fixed only at run time
    ("#SBATCH -N 2 --gpus-per-node=4", dict(nodes=2, gpus_per_node=4)),
    ("#SBATCH -N 2 --gpus-per-node=a100:4", dict(gpus_per_node=4)),
    ("#SBATCH -N 2 --gres=gpu:4", dict(gpus_per_node=4)),
    ("#SBATCH -N 2 --gres=gpu:a100:4", dict(gpus_per_node=4)),
    ("#SBATCH -N 1 --gres=gpu", dict(gpus_per_node=1)),
    ("#SBATCH --gres=nvme:1,gpu:v100:2", dict(nodes=1, gpus_per_node=2)),
    ("#SBATCH -N 2\n#SBATCH --gpus=v100-32:16", dict(nodes=2, gpus_per_node=8)),
    ("#SBATCH -N 2 -G 8", dict(gpus_per_node=4)),
    ("#SBATCH -N 2 --ntasks-per-node=8 --gpus-per-task=1", dict(gpus_per_node=8)),
    ("#SBATCH -A m1234_g -C gpu -q regular -N 2", dict(account="m1234_g", queue="regular", nodes=2)),
    ("#SBATCH --account=abc --partition=gpuA100x4", dict(account="abc", queue="gpuA100x4")),
    ("#SBATCH -p batch -q debug", dict(queue="debug")),
    ("#SBATCH --qos regular  # production runs", dict(queue="regular")),
    ("#SBATCH -t 30", dict(walltime="00:30:00")),
    ("#SBATCH --time=90:30", dict(walltime="01:30:30")),
    ("#SBATCH --time 12:00:00", dict(walltime="12:00:00")),
    ("#SBATCH -t 2-00", dict(walltime="48:00:00")),
    ("#SBATCH -t 1-12:30", dict(walltime="36:30:00")),
    ("#SBATCH -t 3-01:02:03", dict(walltime="73:02:03")),
    ("#SBATCH --nodes=1 --tasks-per-node=1 --gpus-per-task=8", dict(nodes=1, gpus_per_node=8)),  # LUMI guide
    ("#SBATCH -J x\n# SBATCH -N 9\n#SBATCH -N 2", dict(nodes=2)),  # '# SBATCH' is a disabled directive
    ("#SBATCH -N 2\nset -e\n#SBATCH -N 8", dict(nodes=2)),  # after the first command: ignored as Slurm does
])
def test_slurm_directive_spellings(directives, expected):
    intent = extract_script(SLURM_HEAD + directives + "\n")
    assert intent.scheduler == "slurm"
    assert fields(intent, *expected) == expected


@pytest.mark.parametrize("directives, expected", [
    ("#PBS -l select=2:ncpus=64:ngpus=4", dict(nodes=2, gpus_per_node=4)),
    ("#PBS -l select=2:system=polaris", dict(nodes=2, gpus_per_node=None)),
    ("#PBS -l select=1:ngpus=4+1:ngpus=4", dict(nodes=2, gpus_per_node=4)),
    ("#PBS -l nodes=3:ppn=4:gpus=4", dict(nodes=3, gpus_per_node=4)),
    ("#PBS -lselect=8", dict(nodes=8)),
    ("#PBS -l walltime=01:00:00", dict(walltime="01:00:00", nodes=1)),
    ("#PBS -l walltime=30:00", dict(walltime="00:30:00")),
    ("#PBS -l walltime=5400", dict(walltime="01:30:00")),
    ("#PBS -A proj -q debug -l select=2,walltime=2:00:00 -l filesystems=home:eagle",
     dict(account="proj", queue="debug", nodes=2, walltime="02:00:00")),
])
def test_pbs_directive_spellings(directives, expected):
    intent = extract_script("#!/bin/bash\n" + directives + "\n")
    assert intent.scheduler == "pbs"
    assert fields(intent, *expected) == expected


@pytest.mark.parametrize("value, expected", [
    ("45", "00:45:00"), ("90", "01:30:00"), ("05:30", "00:05:30"), ("1:00:00", "01:00:00"),
    ("100:00:00", "100:00:00"), ("1-0", "24:00:00"), ("0-06:15", "06:15:00"), ("2-03:04:05", "51:04:05"),
    ("UNLIMITED", None),
])
def test_slurm_time_formats(value, expected):
    assert slurm_walltime(value) == expected


def test_pbs_walltime_seconds_and_clock():
    assert [pbs_walltime(v) for v in ("3600", "10:00", "72:00:00")] == ["01:00:00", "00:10:00", "72:00:00"]


@pytest.mark.parametrize("directive, fragment", [
    ("#SBATCH -N two", "--nodes"),
    ("#SBATCH --time=soon", "--time"),
    ("#SBATCH --gpus-per-node=many", "--gpus-per-node"),
    ("#SBATCH --ntasks-per-node=0", "--ntasks-per-node"),
    ("#SBATCH --job-name='unterminated", "#SBATCH"),
    ("#PBS -l walltime=1h", "walltime"),
])
def test_bad_directive_values_name_the_line(directive, fragment):
    with pytest.raises(MapleError) as err:
        extract_script(f"#!/bin/bash\n#SBATCH -A x\n{directive}\n" if directive.startswith("#SBATCH")
                       else f"#!/bin/bash\n{directive}\n")
    assert fragment in str(err.value) and "line" in str(err.value)
    assert err.value.exit_code == 2


# --- launch lines ---------------------------------------------------------------------------

@pytest.mark.parametrize("body, expected", [
    # srun, one task per GPU, counts on the step or inherited from the allocation
    ("#SBATCH -N 2 --ntasks-per-node=4 --gpus-per-node=4\nsrun python train.py",
     dict(launcher="srun", nodes=2, gpus_per_node=4, world_size=8)),
    ("#SBATCH -N 2 --gpus-per-node=4\nsrun python train.py",  # no task count: one task per node
     dict(launcher="srun", world_size=2)),
    ("#SBATCH -N 2\nsrun -N2 -n16 -c7 --gpus-per-task=1 --gpu-bind=closest python3 -u train.py",
     dict(launcher="srun", gpus_per_node=8, world_size=16)),
    ("#SBATCH -N 4 --gpus-per-node=4\nsrun --ntasks-per-node=4 --cpu-bind=cores python train.py",
     dict(launcher="srun", world_size=16)),
    ("#SBATCH -N 2 --ntasks=8 --gpus-per-node=4\nsrun -l -u --mpi=pmi2 python train.py",
     dict(launcher="srun", world_size=8)),
    # srun around torchrun / python -m torch.distributed.run: torchrun starts the GPU workers
    ("#SBATCH -N 2 --gpus-per-node=4\nsrun --ntasks-per-node=1 torchrun --nnodes=$SLURM_JOB_NUM_NODES "
     "--nproc_per_node=4 --rdzv_backend=c10d --rdzv_endpoint=$MASTER_ADDR:29500 train.py",
     dict(launcher="torchrun", nodes=2, gpus_per_node=4, world_size=8)),
    ("#SBATCH -N 3 --gpus-per-node=8\nsrun python -m torch.distributed.run --nnodes $SLURM_NNODES "
     "--nproc-per-node $SLURM_GPUS_PER_NODE --node_rank $SLURM_PROCID train.py",
     dict(launcher="torchrun", nodes=3, gpus_per_node=8, world_size=24)),
    ("srun singularity exec --rocm -B /scratch img.sif bash -c 'python -m torch.distributed.run "
     "--nnodes=2 --nproc_per_node=8 train.py'",
     dict(launcher="torchrun", nodes=2, gpus_per_node=8, world_size=16, scheduler="slurm")),
    # MPICH/PALS and Open MPI spellings
    ("mpiexec -n 8 -ppn 4 --envall --cpu-bind depth -d 16 python train.py",
     dict(launcher="mpiexec", nodes=2, gpus_per_node=4, world_size=8)),
    ("mpiexec -np 8 --ppn=4 --env OMP_NUM_THREADS=4 -genv FOO bar python train.py",
     dict(launcher="mpiexec", nodes=2, world_size=8, env={"OMP_NUM_THREADS": "4", "FOO": "bar"})),
    ("mpirun -np 16 -N 8 -x NCCL_DEBUG=INFO -x PATH --mca btl ^openib --bind-to none python train.py",
     dict(launcher="mpirun", nodes=2, gpus_per_node=8, world_size=16, env={"NCCL_DEBUG": "INFO"})),
    ("#SBATCH -N 2 -n 2\nmpirun -np 2 --map-by ppr:1:node torchrun --nproc_per_node=3 --nnodes=2 train.py",
     dict(launcher="torchrun", nodes=2, gpus_per_node=3, world_size=6)),
    ("#SBATCH -N 2 -n 2\nibrun -np 2 ./run.sh host 2",
     dict(launcher="ibrun", nodes=2, gpus_per_node=None, world_size=None, entrypoint="./run.sh")),
    # single-node launchers and their defaults
    ("torchrun --standalone --nproc_per_node=4 train.py", dict(launcher="torchrun", nodes=1, world_size=4)),
    ("torchrun --nproc-per-node gpu train.py", dict(launcher="torchrun", nodes=1, gpus_per_node=None)),
    ("torchrun --nnodes=1:4 --nproc_per_node=4 train.py", dict(nodes=None, gpus_per_node=4)),
    ("python -m torch.distributed.launch --use_env --nproc_per_node 2 train.py", dict(launcher="torchrun", world_size=2)),
    ("deepspeed --num_gpus 4 train.py --deepspeed_config ds.json", dict(launcher="deepspeed", nodes=1, world_size=4)),
    ("deepspeed --hostfile=hostfile --num_nodes 2 --num_gpus 8 --launcher openmpi train.py",
     dict(launcher="deepspeed", nodes=2, gpus_per_node=8, world_size=16)),
    ("accelerate launch --num_processes 4 train.py", dict(launcher="accelerate", nodes=1, gpus_per_node=4)),
    ("accelerate launch --multi_gpu --num-machines 2 --num-processes 16 train.py",
     dict(launcher="accelerate", nodes=2, gpus_per_node=8, world_size=16)),
    ("python train.py --epochs 3", dict(launcher="python", world_size=1, strategy="single")),
    ("#SBATCH -N 1 --gpus-per-node=4\npython3 -u train.py", dict(launcher="python", world_size=1, gpus_per_node=4)),
])
def test_launch_lines(body, expected):
    intent = extract_script(body + "\n")
    assert fields(intent, *expected) == expected


@pytest.mark.parametrize("line, entrypoint, args", [
    ("python train.py --lr=1e-3 --name 'my run' $EXTRA", "train.py", ["--lr=1e-3", "--name", "my run", "$EXTRA"]),
    ("python -u -m mypkg.train --cfg a.yaml", "-m mypkg.train", ["--cfg", "a.yaml"]),
    ("torchrun --nproc_per_node 4 -m mypkg.train -- --x 1", "-m mypkg.train", ["--", "--x", "1"]),
    ("torchrun --nproc_per_node 4 src/train.py \\\n    --epochs 10 \\\n    --out \"$OUT\"", "src/train.py",
     ["--epochs", "10", "--out", "$OUT"]),
    ("time env OMP_NUM_THREADS=4 numactl --cpunodebind=0 python train.py", "train.py", []),
    ("srun uv run --with wandb torchrun --nproc-per-node 4 train.py", "train.py", []),
    ("conda run -n torch python train.py --x", "train.py", ["--x"]),
    ("srun sh -xeuc 'torchrun --nnodes $SLURM_NNODES --nproc-per-node gpu main.py'", "main.py", []),
    ("srun shifter --image=nersc/pytorch:24.06 python train.py", "train.py", []),
    ("apptainer exec --nv --bind /data:/data img.sif python3 train.py --x", "train.py", ["--x"]),
    ("mpiexec -n 4 ./set_affinity_gpu_polaris.sh python3 train.py", "train.py", []),
    ("python -m pip install -r req.txt\nsrun python train.py", "train.py", []),
    ("srun -N1 -n1 hostname\nsrun python main.py", "main.py", []),  # utilities are not the job
    ("head_ip=$(srun -N1 -n1 -w $head hostname --ip-address)\npython main.py", "main.py", []),
    ("cat > hostfile <<EOF\nnode1 slots=4\npython fake.py\nEOF\ndeepspeed --hostfile hostfile t.py", "t.py", []),
    ("if [ \"$N\" -gt 1 ]; then\n  srun python multi.py\nelse\n  python single.py\nfi", "multi.py", []),
    ("for seed in 1 2; do\n  srun python t.py --seed $seed\ndone", "t.py", ["--seed", "$seed"]),
    ("run() {\n  srun python t.py \"$@\"\n}\nrun --lr 1", "t.py", ["--lr", "1"]),  # the function's arguments
    ("cd $SLURM_SUBMIT_DIR && srun python t.py 2>&1 | tee log.txt", "t.py", []),
    ("python prepare.py\nsrun python train.py", "train.py", []),  # a parallel launch beats plain python
    ("SCRIPT=src/train.py\nsrun python $SCRIPT --out $SCRATCH", "src/train.py", ["--out", "$SCRATCH"]),
    ("srun python $HOME/train.py", "$HOME/train.py", []),  # a user variable: kept as written
])
def test_entrypoint_and_verbatim_args(line, entrypoint, args):
    intent = extract_script(line + "\n")
    assert (intent.entrypoint, intent.script_args) == (entrypoint, args)


# --- variables ------------------------------------------------------------------------------

@pytest.mark.parametrize("body, expected", [
    ("NNODES=2\nNGPUS=4\ntorchrun --nnodes=$NNODES --nproc_per_node=${NGPUS} train.py",
     dict(nodes=2, gpus_per_node=4, world_size=8)),
    ("export NNODES=3\nmpiexec -n $((NNODES*4)) --ppn 4 python train.py", dict(nodes=3, world_size=12)),
    ("N=2; PPN=4\nmpiexec -n $(( ${N} * $PPN )) --ppn $PPN python train.py", dict(nodes=2, world_size=8)),
    ("TOTAL=$((2*4))\nPER=$((TOTAL/2))\nmpiexec -n $TOTAL --ppn $PER python train.py", dict(gpus_per_node=4, world_size=8)),
    ("torchrun --nnodes=${NNODES:-2} --nproc_per_node=4 train.py", dict(nodes=2, world_size=8)),
    ("#SBATCH -N 4 --gpus-per-node=4\nsrun torchrun --nnodes $SLURM_NNODES --nproc_per_node $SLURM_GPUS_PER_NODE t.py",
     dict(nodes=4, gpus_per_node=4, world_size=16)),
    ("#SBATCH -N 2 --ntasks-per-node=4\nmpirun -np $SLURM_NTASKS python t.py", dict(world_size=8)),
    ("#PBS -l select=3\nNNODES=$(wc -l < $PBS_NODEFILE)\nmpiexec -n $((NNODES*4)) --ppn 4 python t.py",
     dict(nodes=3, gpus_per_node=4, world_size=12)),
    ("#PBS -l select=3\nNNODES=`sort -u $PBS_NODEFILE | wc -l`\ntorchrun --nnodes=$NNODES --nproc_per_node=4 t.py",
     dict(nodes=3, world_size=12)),
    ("#PBS -l select=2\n# note: $(unbalanced\nNN=$(\n  wc -l < $PBS_NODEFILE\n)\nmpiexec -n $((NN*4)) --ppn 4 python t.py",
     dict(nodes=2, world_size=8)),  # a substitution over several lines
    # only known at run time: stays None, never invented
    ("torchrun --nnodes=$NNODES --nproc_per_node=$NGPUS train.py", dict(nodes=None, gpus_per_node=None, world_size=None)),
    ("N=$(get_node_count)\nmpiexec -n $((N*4)) --ppn 4 python t.py", dict(nodes=None, world_size=None, gpus_per_node=4)),
    ("#SBATCH -N 2-4\nsrun torchrun --nnodes $SLURM_NNODES --nproc_per_node 4 t.py", dict(nodes=None, world_size=None)),
])
def test_variables_resolve_only_when_known(body, expected):
    intent = extract_script(body + "\n")
    assert fields(intent, *expected) == expected


@pytest.mark.parametrize("body", [
    # the reference launch sketches maple-ci generates; the verifier relies on reading them back
    "#SBATCH -A p -C gpu -q regular -N 2 -t 01:00:00\n#SBATCH --ntasks-per-node=4 --gpus-per-node=4\n"
    "srun bash -c 'RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID WORLD_SIZE=$SLURM_NTASKS python train.py'",
    "#PBS -A p -q debug-scaling -l select=2:system=polaris -l place=scatter\nNNODES=$(wc -l < $PBS_NODEFILE)\n"
    "mpiexec -n $((NNODES*4)) --ppn 4 --depth 16 --cpu-bind depth python3 train.py",
    "#SBATCH -A p -p batch -N 2 -t 00:30:00\nsrun -N2 -n8 -c7 --gpus-per-task=1 --gpu-bind=closest python3 -u train.py",
    "#SBATCH --nodes=2 --ntasks-per-node=1 --gpus-per-node=4\n"
    "srun torchrun --nnodes $SLURM_NNODES --nproc_per_node 4 --rdzv_backend c10d train.py",
    "#SBATCH -p gpu-a100 -N 2 -n 2 -t 01:00:00 --gpus-per-node=4\n"
    "mpirun -np 2 --map-by ppr:1:node bash -c 'torchrun --nproc_per_node=4 --nnodes=2 train.py'",
    "#PBS -l select=2:ngpus=4\ndeepspeed --hostfile=hostfile --num_gpus 4 train.py --deepspeed_config ds.json",
    "#SBATCH -N 2 --ntasks-per-node=1 --gpus-per-node=4\nsrun accelerate launch --num_machines 2 --num_processes 8 train.py",
    # maple-ci's own forms: the rank variables are set inside the step, the command comes as "$@"
    "#SBATCH --nodes=2 --ntasks-per-node=4 --gpus-per-node=4\nsrun --nodes=2 --ntasks-per-node=4 \\\n"
    "    bash -c 'export RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID; exec \"$@\"' maple-rank \\\n"
    "    python train.py --epochs 10",
    "#PBS -l select=2:system=polaris\nmpiexec --envall -n 8 --ppn 4 --depth=8 --cpu-bind depth \\\n"
    "    bash -c 'export RANK=$PMI_RANK WORLD_SIZE=$PMI_SIZE; exec \"$@\"' maple-rank python train.py",
    "#SBATCH --nodes=2 --ntasks-per-node=1 --gpus-per-node=4\nsrun --nodes=2 --ntasks-per-node=1 \\\n"
    "    bash -c 'exec accelerate launch --machine_rank=\"$SLURM_NODEID\" \"$@\"' maple-node \\\n"
    "    --multi_gpu --num_machines=2 --num_processes=8 train.py",
])
def test_generated_forms_have_consistent_world_size(body):
    intent = extract_script(body + "\n")
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (2, 4, 8)


@pytest.mark.parametrize("body, world_size", [
    ("#SBATCH -N 4 --ntasks-per-node=4 --gpus-per-node=4\nsrun -N 2 python t.py", 8),  # a step on part of the job
    ("#SBATCH -N 2 -n 8\nsrun python t.py", 8),
    ("#SBATCH -n 8 --gpus-per-task=1\nsrun python t.py", 8),
    ("#SBATCH -n 8\nsrun --ntasks-per-node=4 python t.py", 8),  # the step inherits SLURM_NTASKS
    ("#SBATCH -n 8\nsrun -n $NT python t.py", None),  # the step's task count is known only at run time
])
def test_srun_inherits_the_allocation_layout(body, world_size):
    assert extract_script(body + "\n").world_size == world_size


def test_bash_c_positional_arguments():
    intent = extract_script("srun -N 1 -n 4 bash -c 'python \"$1\" --seed $2' job train.py 7\n")
    assert (intent.entrypoint, intent.script_args, intent.world_size) == ("train.py", ["--seed", "7"], 4)


def test_aurora_form_counts_tiles():
    intent = extract_script("#PBS -l select=2\nNNODES=$(wc -l < $PBS_NODEFILE)\n"
                            "mpiexec -n $((NNODES*12)) --ppn 12 --cpu-bind=list:4-7:8-11 python train.py\n")
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (2, 12, 24)


def test_inconsistent_launch_is_visible_to_the_verifier():
    intent = extract_script("#SBATCH -N 2 --gpus-per-node=4\nsrun -n 4 python train.py\n")
    assert (intent.nodes * intent.gpus_per_node, intent.world_size) == (8, 4)


# --- environment ----------------------------------------------------------------------------

def test_windows_line_endings_are_read():
    intent = extract_script("#SBATCH -N 2 --gpus-per-node=4\r\nexport A=1\r\nsrun --ntasks-per-node=4 python t.py\r\n")
    assert (intent.nodes, intent.world_size, intent.env) == (2, 8, {"A": "1"})


def test_node_range_leaves_the_launch_line_to_say():
    intent = extract_script("#SBATCH -N 2-4\nsrun torchrun --nnodes 2 --nproc_per_node 4 t.py\n")
    assert (intent.nodes, intent.world_size) == (2, 8)


def test_modules_env_and_python_env():
    intent = extract_script(
        "#!/bin/bash\n"
        "module purge\nmodule use /soft/modulefiles\nmodule load gcc/12 cuda/12.2\nml nccl\nml load cudnn\n"
        "module load -q openmpi\nmodule unload gcc/12\nmodule swap cuda/12.2 cuda/12.4\n"
        "export NCCL_DEBUG=INFO OMP_NUM_THREADS=8\nexport MASTER_ADDR=$(hostname) MASTER_PORT=29500 RANK=0\n"
        "LOCAL_ONLY=1\nDATA=/scratch/data\nexport DATA\nexport CACHE=$DATA/cache\n"
        "conda activate /envs/torch\n"
        "torchrun --nproc_per_node 4 train.py\n")
    assert intent.modules == ["cuda/12.4", "nccl", "cudnn", "openmpi"]
    assert intent.env == {"NCCL_DEBUG": "INFO", "OMP_NUM_THREADS": "8", "DATA": "/scratch/data",
                          "CACHE": "/scratch/data/cache"}
    assert intent.python_env == "conda activate /envs/torch"


@pytest.mark.parametrize("line, expected", [
    ("source venv/bin/activate", "source venv/bin/activate"),
    (". $SCRATCH/env/bin/activate", "source $SCRATCH/env/bin/activate"),
    ("source activate myenv", "conda activate myenv"),
    ("conda activate", "conda activate"),
    ("micromamba activate train", "micromamba activate train"),
    ("source ~/.bashrc", None),
])
def test_python_env_spellings(line, expected):
    assert extract_script(f"{line}\npython train.py\n").python_env == expected


def test_exports_inside_the_step_count_but_rank_plumbing_does_not():
    intent = extract_script(
        "#SBATCH -N 1 --ntasks-per-node=4 --gpus-per-node=4\n"
        "srun bash -c 'export RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID; export NCCL_DEBUG=WARN; python t.py'\n")
    assert intent.env == {"NCCL_DEBUG": "WARN"} and intent.world_size == 4


# --- frameworks, strategies and configs -------------------------------------------------------

@pytest.mark.parametrize("body, framework, strategy", [
    ("torchrun --nproc_per_node 4 train.py", "pytorch", "ddp"),
    ("torchrun --nproc_per_node 4 train.py --fsdp 'full_shard auto_wrap'", "pytorch", "fsdp"),
    ("torchrun --nproc_per_node 4 train.py --deepspeed ds_zero3.json", "deepspeed", "zero3"),  # unreadable: its name
    ("torchrun --nproc_per_node 4 train.py --deepspeed_config conf.json", "deepspeed", None),  # unreadable, unnamed
    ("deepspeed --num_gpus 4 train.py --zero_stage 1", "deepspeed", "zero1"),
    ("deepspeed --num_gpus 4 train.py", "deepspeed", "ddp"),
    ("accelerate launch --use_deepspeed --zero_stage 2 --num_processes 4 train.py", "accelerate", "zero2"),
    ("accelerate launch --num_processes 4 --fsdp_sharding_strategy FULL_SHARD train.py", "accelerate", "fsdp"),
    ("accelerate launch --config_file missing.yaml train.py", "accelerate", None),
    ("torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 8", "megatron", "tp"),
    ("torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 1 "
     "--pipeline-model-parallel-size 1", "megatron", "ddp"),
    ("srun python train_lightning.py --trainer.strategy=deepspeed_stage_3", "lightning", "zero3"),
    ("srun python main.py fit --trainer.devices 4 --trainer.strategy ddp", "lightning", "ddp"),
    ("srun python pretrain_gpt.py --tensor-model-parallel-size $TP", "megatron", None),  # run-time size
    ("python train.py", "pytorch", "single"),
])
def test_framework_and_strategy(body, framework, strategy):
    intent = extract_script(body + "\n")
    assert (intent.framework, intent.strategy) == (framework, strategy)


def test_deepspeed_config_is_read_from_base_dir(tmp_path):
    (tmp_path / "conf.json").write_text('{"zero_optimization": {"stage": 3}}')
    body = "torchrun --nproc_per_node 4 train.py --deepspeed --deepspeed_config conf.json\n"
    assert extract_script(body, base_dir=tmp_path).strategy == "zero3"
    assert extract_script(body).strategy is None  # no folder given: not read, not guessed
    (tmp_path / "conf.json").write_text('{"train_batch_size": 8}')  # no ZeRO section: plain data parallel
    assert extract_script(body, base_dir=tmp_path).strategy == "ddp"


def test_accelerate_config_supplies_counts(tmp_path):
    (tmp_path / "fsdp.yaml").write_text(yaml.safe_dump(
        {"distributed_type": "FSDP", "num_machines": 2, "num_processes": 8, "fsdp_config": {}}))
    intent = extract_script("accelerate launch --config_file fsdp.yaml train.py\n", base_dir=tmp_path)
    assert fields(intent, "strategy", "nodes", "gpus_per_node", "world_size", "configs") == dict(
        strategy="fsdp", nodes=2, gpus_per_node=4, world_size=8, configs={"accelerate": "fsdp.yaml"})


def test_extract_uses_the_script_folder_for_configs():
    intent = script(DATA / "deepspeed_polaris.pbs")
    assert intent.strategy == "zero2"


# --- missing --------------------------------------------------------------------------------

@pytest.mark.parametrize("body, missing", [
    ("#SBATCH -N 2 --gpus-per-node=4\nsrun python train.py", []),
    ("#SBATCH -N 2 --gpus-per-node=4\necho nothing to run", ["entrypoint"]),
    ("#SBATCH -N 2\nsrun --ntasks-per-node=1 ./wrapper.sh", []),  # the wrapper is the program
    ("torchrun --nnodes=$N --nproc_per_node=$G train.py", []),  # sizes come from the allocation
])
def test_missing_lists_required_fields_only(body, missing):
    intent = extract_script(body + "\n")
    assert intent.missing == missing and "walltime" not in intent.missing


# --- source cluster -------------------------------------------------------------------------

@pytest.fixture
def two_clusters(tmp_path, monkeypatch):
    """A profile folder with two made-up clusters, so the tests do not depend on the real data."""
    base = yaml.safe_load((templates_dir() / "clusters" / "perlmutter.yaml").read_text())
    (tmp_path / "clusters").mkdir()
    for name, display, signatures in [
        ("alpha", "Lab Alpha", [r"(?m)^#SBATCH[^\n]*--constraint=alphagpu", r"(?i)\balpha\b"]),
        ("betamachine", "Center Betamachine", [r"beta-net-plugin", r"(?i)\bbetamachine\b"]),
    ]:
        profile = dict(base, name=name, display_name=display, signatures=signatures)
        (tmp_path / "clusters" / f"{name}.yaml").write_text(yaml.safe_dump(profile))
    monkeypatch.setenv("MAPLE_TEMPLATES_DIR", str(tmp_path))


@pytest.mark.parametrize("text, cluster", [
    ("#SBATCH --constraint=alphagpu\nsrun python t.py", "alpha"),
    ("#SBATCH -N 1\nmodule load beta-net-plugin\nsrun python t.py", "betamachine"),
    ("#SBATCH -N 1\n# tuned on Alpha and Betamachine\nsrun python t.py", None),  # a tie names neither
    ("#SBATCH --constraint=alphagpu\n# runs on alpha, not betamachine\nsrun python t.py", "alpha"),
    ("#SBATCH -N 1\nsrun python t.py", None),
])
def test_source_cluster_from_profile_signatures(two_clusters, text, cluster):
    assert extract_script(text + "\n").source_cluster == cluster


def test_source_cluster_real_perlmutter_profile():
    assert extract_script("#SBATCH -C gpu -N 1\nsrun python t.py\n").source_cluster == "perlmutter"


@pytest.mark.parametrize("text, cluster", [
    ("this currently runs on Alpha; port it to Betamachine", "alpha"),
    ("move my job from betamachine to alpha", "betamachine"),
    ("port to alpha please", None),
    ("train on 2 nodes of Alpha", None),  # where to run, not where it runs now
    ("the script was written for the betamachine cluster", "betamachine"),
    ("it is running on Lab Alpha today", "alpha"),
])
def test_request_source_cluster(two_clusters, text, cluster):
    assert extract_request(text).source_cluster == cluster


# --- requests in words ----------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("train ViT with torchrun on 8 GPUs across 2 nodes of Polaris",
     dict(launcher="torchrun", nodes=2, gpus_per_node=4, world_size=8, strategy="ddp", missing=["entrypoint"])),
    ("two nodes, 4 gpus per node", dict(nodes=2, gpus_per_node=4, world_size=8)),
    ("I'll use 2 servers with 8 GPUs each", dict(nodes=2, gpus_per_node=8)),
    ("run it on a couple of machines with 4 GPUs per node", dict(nodes=2, gpus_per_node=4)),
    ("a dozen nodes, 4 GPUs/node", dict(nodes=12, gpus_per_node=4, world_size=48)),
    ("on a single node with eight GPUs", dict(nodes=1, gpus_per_node=8)),
    ("--nodes 2 --gpus-per-node 4", dict(nodes=2, gpus_per_node=4)),
    ("2 nodes x 4 GPUs", dict(nodes=2, gpus_per_node=4)),
    ("16 GPUs across 3 nodes", dict(nodes=3, gpus_per_node=None, world_size=16)),  # not divisible
    ("fully sharded data parallel on 16 GPUs", dict(strategy="fsdp", world_size=16, nodes=None)),
    ("use FSDP", dict(strategy="fsdp")),
    ("ZeRO-3 with deepspeed", dict(strategy="zero3", framework="deepspeed", launcher="deepspeed")),
    ("zero stage 2 please", dict(strategy="zero2", framework="deepspeed")),
    ("with accelerate launch", dict(framework="accelerate", launcher="accelerate")),
    ("megatron with tensor parallel", dict(framework="megatron", strategy="tp")),
    ("megatron 3d parallel", dict(strategy="3d", walltime=None)),
    ("a single gpu", dict(world_size=1, strategy="single")),
    ("for 2 hours", dict(walltime="02:00:00")),
    ("time limit 90 minutes", dict(walltime="01:30:00")),
    ("1.5 hours", dict(walltime="01:30:00")),
    ("walltime 04:00:00", dict(walltime="04:00:00")),
    ("account m1234, debug queue", dict(account="m1234", queue="debug")),
    ("use the qos regular", dict(queue="regular")),
    # typos in keywords
    ("torchrn on two nodse", dict(launcher="torchrun", nodes=2)),
    ("deepsped zero3", dict(framework="deepspeed", strategy="zero3")),
])
def test_request_phrasings(text, expected):
    intent = extract_request(text)
    assert fields(intent, *expected) == expected


@pytest.mark.parametrize("text, entrypoint, args", [
    ("run train.py --epochs 3 --lr 1e-4 on 2 nodes", "train.py", ["--epochs", "3", "--lr", "1e-4"]),
    ("please port `python src/train.py --batch 32` to polaris", "src/train.py", ["--batch", "32"]),
    ("python -m mypkg.train --cfg a.yaml, 4 GPUs", "-m mypkg.train", ["--cfg", "a.yaml"]),
    ("train.py --fp16 on 2 nodes", "train.py", ["--fp16"]),
    ("I'll use two servers to train GPT-2 (train_gpt2.py)", "train_gpt2.py", []),
    ("no program named here", None, []),
])
def test_request_entrypoint(text, entrypoint, args):
    intent = extract_request(text)
    assert (intent.entrypoint, intent.script_args) == (entrypoint, args)


def test_request_missing_fields():
    assert extract_request("please port this").missing == ["entrypoint"]


@pytest.mark.parametrize("text, is_script", [
    ("#!/bin/bash\npython train.py", True),
    ("#SBATCH -N 2\nsrun python train.py", True),
    ("#PBS -l select=2\nmpiexec -n 8 python t.py", True),
    ("torchrun --nproc_per_node 4 train.py", True),
    ("NNODES=2 accelerate launch --num_machines 2 train.py", True),
    ("train with torchrun on two nodes", False),
    ("deepspeed on 2 nodes please", False),
    ("accelerate launch train.py on two nodes with 4 GPUs per node", False),  # a command inside a sentence
    ("torchrun --nnodes 2 --nproc_per_node 4 train.py --epochs 3", True),
])
def test_extract_detects_scripts_and_requests(text, is_script):
    expected = extract_script(text) if is_script else extract_request(text)
    assert extract(text) == expected


# --- bad input ------------------------------------------------------------------------------

def test_load_source_reads_files_and_text(tmp_path):
    path = tmp_path / "job.sbatch"
    path.write_text("#SBATCH -N 1\nsrun python t.py\n")
    assert load_source(str(path)) == (str(path), path.read_text())
    assert load_source("train on 2 nodes") == ("<text>", "train on 2 nodes")


def _write(content: bytes):
    return lambda path: path.write_bytes(content) and path


@pytest.mark.parametrize("make, fragment", [
    (lambda path: path.mkdir() or path, "directory"),
    (_write(b"#!/bin/bash\n\0\0ELF"), "binary"),
    (_write(b"#!/bin/bash\necho \xff\xfe\n"), "UTF-8"),
    (_write(b"#" * (MAX_SOURCE_BYTES + 1)), "1024 KiB"),
])
def test_load_source_rejects_bad_files(tmp_path, make, fragment):
    path = make(tmp_path / "input")
    with pytest.raises(MapleError) as err:
        load_source(str(path))
    assert fragment in str(err.value) and str(path) in str(err.value) and err.value.exit_code == 2


def test_load_source_unreadable_file(tmp_path, monkeypatch):
    path = tmp_path / "secret.sbatch"
    path.write_text("srun python t.py\n")

    def deny(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied")

    with monkeypatch.context() as patch, pytest.raises(MapleError, match="cannot read .*secret.sbatch: Permission denied"):
        patch.setattr(os, "open", deny)
        load_source(str(path))


def test_huge_or_binary_text_is_rejected():
    with pytest.raises(MapleError, match="limit"):
        extract("x" * (MAX_SOURCE_BYTES + 1))
    with pytest.raises(MapleError, match="NUL"):
        extract("srun python\0 t.py")


@pytest.mark.parametrize("body, line", [
    ("#!/bin/bash\nexport A=1\nsrun python train.py --name 'unterminated\n", None),
    ("#!/bin/bash\necho ok\nsrun python train.py )\necho after\n", 3),
    ("#!/bin/bash\nif true; then\n  srun python train.py\n", None),
    ("#!/bin/bash\nsrun bash -c 'python train.py )'\n", 1),
])
def test_malformed_scripts_name_the_line(body, line):
    with pytest.raises(MapleError) as err:
        extract(body, "job.sbatch")
    assert str(err.value).startswith("job.sbatch: ") and "line" in str(err.value) and err.value.exit_code == 2
    if line:
        assert f"line {line}" in str(err.value)


def test_walltime_beyond_any_queue_is_an_input_error():
    with pytest.raises(MapleError, match="9999 hours"):
        extract_script("#SBATCH -t 500-00\n")
    with pytest.raises(MapleError, match="9999 hours"):
        extract_request("for 20000 hours")


@pytest.mark.parametrize("arg", ["nosuch.sbatch", "jobs/train.sh", "./run"])
def test_a_missing_script_path_is_named_not_read_as_a_request(arg, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MapleError, match=f"no such file: {re.escape(arg)}"):
        load_source(arg)


def test_a_request_that_mentions_paths_is_still_a_request():
    name, text = load_source("train train.py on 2 nodes with data in /scratch/imagenet")
    assert name == "<text>" and "/scratch" in text


@pytest.mark.parametrize("text, nodes, per_node", [
    ("multi-node GPT-2: 2 x 4 gpus, ZeRO stage 3 via deepspeed, script train.py", 2, 4),
    ("3×8 GPUs, torchrun train.py", 3, 8),
    ("launch train.py w/ torchrun, nnodes=4, nproc_per_node=8", 4, 8),
])
def test_requests_in_launcher_shorthand(text, nodes, per_node):
    intent = extract_request(text)
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (nodes, per_node, nodes * per_node)
