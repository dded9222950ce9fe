"""Issue 25, classes 3 and 5: what a program does (its framework, its parallel strategy) is read from
what it is given: its own file, the checkout's modules it imports, the config files and flags it
gets, never from a guess by size. Each script, program and config here is written for these tests,
in styles the corpus does not hold."""

from pathlib import Path

import pytest

from maple_ci.extract import extract_script
from maple_ci.intent import JobIntent

ONE_GPU = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gres=gpu:1\n#SBATCH -t 02:00:00\n"
FOUR_GPUS = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gres=gpu:4\n#SBATCH -t 02:00:00\n"
PER_GPU = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n#SBATCH -t 02:00:00\n"


def read(text: str, tmp_path: Path, files: dict) -> JobIntent:
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    return extract_script(text, tmp_path, "job.sh", tmp_path)


@pytest.mark.parametrize("launch, files, framework", [
    # the framework is in the checkout's own module the program imports, not in the program's file
    ("python fit_tau.py cfg.yml", {"fit_tau.py": "from cloudphys.nets import Dense\nimport yaml\n",
                                   "cloudphys/nets.py": "import tensorflow as tf\nclass Dense(tf.keras.Model): pass\n"},
     "tensorflow"),
    # ... in a package folder beside it, imported with `from pkg.sub.mod import *`
    ("python ./grow.py 3", {"grow.py": "from cells.train.loop import *\nimport sys\n",
                                        "cells/train/loop.py": "import numpy as np\nfrom tensorflow import keras\n"},
     "tensorflow"),
    # a Lightning program run as a module of a src/-layout package
    ("python -m segm.cli.fit model.depth=3", {"src/segm/cli/fit.py": "import hydra\nimport lightning.pytorch as pl\n"},
     "lightning"),
    # a local module that imports torch as well keeps it PyTorch's (a TensorFlow loader helper)
    ("python convert.py", {"convert.py": "import torch\nfrom io_utils import load\n",
                           "io_utils.py": "import tensorflow as tf\n"}, "pytorch"),
])
def test_the_framework_comes_from_the_program_and_its_own_modules(launch, files, framework, tmp_path):
    assert read(ONE_GPU + launch + "\n", tmp_path, files).framework == framework


def test_an_optional_import_in_a_try_block_does_not_name_the_framework(tmp_path):
    """open_clip-style: `try: import horovod.torch as hvd / except ImportError` is an optional
    dependency; the program is PyTorch DDP under torchrun unless it imports Horovod outright."""
    program = ("import torch\ntry:\n    import horovod.torch as hvd\nexcept ImportError:\n    hvd = None\n"
               "torch.distributed.init_process_group('nccl')\n")
    launch = "srun torchrun --nnodes 2 --nproc_per_node 4 -m clipper.main --epochs 2\n"
    intent = read(PER_GPU.replace("--ntasks-per-node=4", "--ntasks-per-node=1") + launch, tmp_path,
                  {"clipper/main.py": program})
    assert (intent.framework, intent.strategy) == ("pytorch", "ddp")
    (tmp_path / "clipper/main.py").write_text(program.replace("try:\n    import horovod", "import horovod") + "# always\n")
    assert read(PER_GPU + launch, tmp_path, {}).framework == "horovod"
