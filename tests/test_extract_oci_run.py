"""Issue 25: the OCI engines' `run` (podman-hpc, podman, docker) is read with its own options, so the
image is the first operand after those that take a value (`--ipc host`, `--userns keep-id`,
`--security-opt x`) and the program follows it. Apptainer keeps its own grammar (its --userns is a
flag). Scripts written for these tests in styles the corpus does not hold.
"""

import pytest

from maple_ci.extract import extract_script

HEADER = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n"


@pytest.mark.parametrize("engine", ["podman-hpc", "podman", "docker"])
def test_the_image_follows_the_options_that_take_a_value(engine):
    text = HEADER + (f"srun {engine} run --rm --ipc host --net host --userns keep-id --security-opt label=disable "
                     "-v $PWD:/w -w /w --shm-size 16g registry.io/me/train:1 python -m trainer.main --cfg a.yaml\n")
    intent = extract_script(text)
    assert (intent.entrypoint, intent.script_args) == ("-m trainer.main", ["--cfg", "a.yaml"])
    assert (intent.container.runtime, intent.container.image) == (engine, "registry.io/me/train:1")


def test_apptainers_userns_stays_a_flag():
    text = HEADER + "srun apptainer exec --userns --nv img.sif python train.py --epochs 1\n"
    intent = extract_script(text)
    assert (intent.container.image, intent.entrypoint, intent.script_args) == ("img.sif", "train.py", ["--epochs", "1"])
