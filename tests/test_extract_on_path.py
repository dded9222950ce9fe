"""Issue 25: a program named through a PATH lookup (`$(which prog)`, `$(command -v prog)`,
`` `type -P prog` ``) is `prog` as PATH finds it: the console script a framework installs, on the
target too. Scripts written for these tests in styles the corpus does not hold (a legacy
torch.distributed.launch of a console script, a backquoted lookup under mpirun).
"""

import pytest

from maple_ci.extract import extract_script

HEADER = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=4\n#SBATCH --gres=gpu:4\n"


@pytest.mark.parametrize("launch, entry, framework", [
    ("python -m torch.distributed.launch --use_env --nproc_per_node=4 $(which fairseq-hydra-train) --config-name base",
     "fairseq-hydra-train", "fairseq"),
    ("torchrun --nproc_per_node=4 $(command -v llamafactory-cli) train cfg.yaml", "llamafactory-cli", "llamafactory"),
    ("mpirun -np 4 `type -P my-trainer` --config-name base", "my-trainer", "pytorch"),
    ("srun `which fairseq-train` data-bin --config-name base", "fairseq-train", "fairseq"),
])
def test_a_path_lookup_names_the_program(launch, entry, framework, tmp_path):
    intent = extract_script(HEADER + launch + "\n", tmp_path, "job.sh", tmp_path)
    assert (intent.entrypoint, intent.framework) == (entry, framework)
    assert intent.script_args[-2:] == ["--config-name", "base"] or intent.script_args == ["train", "cfg.yaml"]


def test_another_command_substitution_is_kept_as_written(tmp_path):
    """Only a PATH lookup is read: `$(pick_trainer)` is whatever that command prints at run time."""
    intent = extract_script(HEADER + "srun $(pick_trainer) --epochs 2\n", tmp_path, "job.sh", tmp_path)
    assert intent.entrypoint != "pick_trainer"
