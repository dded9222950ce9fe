"""Classes of launch found in the unseen sets (issue 25), each read by its component's own rules:
`ssh HOST torchrun ...` in a loop over a host list (OpenSSH's `ssh [options] destination [command]`,
https://man.openbsd.org/ssh, read 2026-11-29), a script for another shell family, a center's wrapper on
PATH, a personal wrapper before a console script, a console script the checkout declares, and a
launch line continued with `\\` in a script without a shebang."""

from maple_ci.extract import extract, extract_script

SSH_LOOP = """#!/bin/bash
HOSTS=("h1" "h2" "h3" "h4")
RANK=0
for host in ${HOSTS[@]}; do
    ssh $host torchrun --nproc_per_node=2 --nnodes=${#HOSTS[@]} --node_rank=$RANK \\
        --rdzv_backend=c10d --rdzv_endpoint=${HOSTS[0]}:29500 train.py --epochs 3 &
    ((RANK=RANK+1))
done
wait
"""


def test_a_loop_variable_after_ssh_is_the_host_not_an_option_list():
    intent = extract_script(SSH_LOOP, None, "run.sh")
    assert (intent.launcher, intent.entrypoint, intent.script_args) == ("torchrun", "train.py", ["--epochs", "3"])
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (4, 2, 8)


def test_a_tcsh_script_is_refused_as_tcsh_not_as_broken_bash():
    import pytest
    from maple_ci.errors import MapleError

    with pytest.raises(MapleError, match=r"line 1: the script is written for tcsh") as refusal:
        extract_script("#!/bin/tcsh\n#PBS -l nodes=1:ppn=12\nset N = 3\nwhile ( $i < $N )\n  @ i++\nend\n"
                       "torchrun --nnodes=$N train.py\n", None, "run.sh")
    assert "syntax error" not in str(refusal.value)


def test_a_site_wrapper_on_path_is_read_as_the_launch_its_source_runs(tmp_path):
    """SRCE Supek's run-multinode.sh (templates/site_wrappers.yaml): one python3 per node under mpiexec."""
    (tmp_path / "strategy.py").write_text("import tensorflow as tf\ntf.distribute.MultiWorkerMirroredStrategy()\n")
    script = "#PBS -q gpu\n#PBS -l select=2:ngpus=1\nmodule load scientific/tensorflow\nrun-multinode.sh strategy.py --epochs 2\n"
    intent = extract_script(script, tmp_path, "job.sh", tmp_path)
    assert (intent.launcher, intent.entrypoint, intent.script_args) == ("mpiexec", "strategy.py", ["--epochs", "2"])
    assert (intent.framework, intent.strategy) == ("tensorflow", "multi_worker_mirrored")
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (2, 1, 2)
    # a script of that name in the checkout is the checkout's own, read as it is
    (tmp_path / "run-multinode.sh").write_text('#!/bin/bash\ntorchrun --nproc_per_node=4 "$@"\n')
    assert extract_script(script, tmp_path, "job.sh", tmp_path).launcher == "torchrun"


def test_a_personal_wrapper_outside_the_checkout_is_kept_in_front_of_a_console_script():
    """anemoi-training is a PyTorch Lightning console script (ECMWF anemoi-core training/pyproject.toml)."""
    script = ("#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --tasks-per-node=4\n#SBATCH --gpus-per-node=4\n"
              "srun ~/house/slurm2ddp.sh anemoi-training train --config-name=config\n")
    intent = extract_script(script, None, "job.sh")
    assert (intent.entrypoint, intent.script_args, intent.wrapper) == \
        ("anemoi-training", ["train", "--config-name=config"], ["~/house/slurm2ddp.sh"])
    assert (intent.framework, intent.launcher, intent.world_size) == ("lightning", "srun", 16)


def test_a_console_script_the_checkout_declares_is_read_as_its_module(tmp_path):
    """setup.py's console_scripts (the Python packaging guide's entry points) name the program's module."""
    (tmp_path / "setup.py").write_text('from setuptools import setup\nsetup(entry_points={"console_scripts": ["fitcli=pkg.cli:main"]})\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "cli.py").write_text("from lightning.pytorch.cli import LightningCLI\n")
    script = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\nsrun fitcli --config c.yaml fit\n"
    assert extract_script(script, tmp_path, "job.sh", tmp_path).framework == "lightning"
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup()\n")  # not declared: nothing to read
    assert extract_script(script, tmp_path, "job.sh", tmp_path).framework == "pytorch"


def test_a_launch_continued_over_lines_without_a_shebang_is_read_as_a_script():
    text = "accelerate launch \\\n  --num_processes=1 \\\n  --num_machines=1 \\\n  trainable.py \\\n"
    intent = extract(text, "trainable.sh")
    assert (intent.launcher, intent.entrypoint, intent.world_size, intent.strategy) == ("accelerate", "trainable.py", 1, "single")


def test_a_container_image_named_for_jax_names_the_framework_when_the_program_is_not_there():
    """LUMI's images are named for their framework (lumi-jax-rocm-*.sif); one JAX process on 8 devices is no `single`."""
    script = ("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gpus-per-node=8\n#SBATCH --ntasks-per-node=1\n"
              "srun singularity exec /appl/sif/lumi-jax-rocm-6.2.0.sif python3 /project/x/dp.py --batch-size 256\n")
    intent = extract_script(script, None, "run.sh")
    assert (intent.framework, intent.world_size, intent.strategy) == ("jax", 1, None)
    torch_image = script.replace("lumi-jax-rocm-6.2.0", "lumi-pytorch-rocm-6.2.0")
    assert extract_script(torch_image, None, "run.sh").framework == "pytorch"
