"""Issue 25: a job string that prepares data and then trains (`python -m prep && accelerate launch
-m train`, both under one srun) ports the training: among launches that look alike, the one through
a launcher that forks the workers wins. Scripts written for these tests in styles the corpus does
not hold.
"""

import pytest

from maple_ci.extract import extract_script

HEADER = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"


@pytest.mark.parametrize("line, entry", [
    ('srun bash -c "python -m pkg.prepare --cfg c.yaml && accelerate launch --multi_gpu --num_processes 8 -m pkg.train --cfg c.yaml"',
     "-m pkg.train"),
    ('srun bash -c "python tokenize.py && torchrun --nproc_per_node 8 pretrain.py"', "pretrain.py"),
])
def test_the_training_after_a_data_step_is_the_launch(line, entry):
    intent = extract_script(HEADER + line + "\n")
    assert (intent.entrypoint, intent.world_size) == (entry, 8)


def test_of_two_plain_launches_the_first_still_wins():
    intent = extract_script(HEADER + "srun python train.py\nsrun python evaluate.py\n")
    assert intent.entrypoint == "train.py"
