"""Issue 25, classes 3 and 5: what a program does (its framework, its parallel strategy) is read from
what it is given: its own file, the checkout's modules it imports, the config files and flags it
gets, never from a guess by size. Each script, program and config here is written for these tests,
in styles the corpus does not hold."""


import pytest

from checkout import read_with_files

ONE_GPU = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gres=gpu:1\n#SBATCH -t 02:00:00\n"
FOUR_GPUS = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gres=gpu:4\n#SBATCH -t 02:00:00\n"
PER_GPU = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n#SBATCH -t 02:00:00\n"


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
    assert read_with_files(ONE_GPU + launch + "\n", tmp_path, files).framework == framework


def test_an_optional_import_in_a_try_block_does_not_name_the_framework(tmp_path):
    """open_clip-style: `try: import horovod.torch as hvd / except ImportError` is an optional
    dependency; the program is PyTorch DDP under torchrun unless it imports Horovod outright."""
    program = ("import torch\ntry:\n    import horovod.torch as hvd\nexcept ImportError:\n    hvd = None\n"
               "torch.distributed.init_process_group('nccl')\n")
    launch = "srun torchrun --nnodes 2 --nproc_per_node 4 -m clipper.main --epochs 2\n"
    intent = read_with_files(PER_GPU.replace("--ntasks-per-node=4", "--ntasks-per-node=1") + launch, tmp_path,
                  {"clipper/main.py": program})
    assert (intent.framework, intent.strategy) == ("pytorch", "ddp")
    (tmp_path / "clipper/main.py").write_text(program.replace("try:\n    import horovod", "import horovod") + "# always\n")
    assert read_with_files(PER_GPU + launch, tmp_path, {}).framework == "horovod"


@pytest.mark.parametrize("launch, files, strategy", [
    # a DeepSpeed config given by the Lightning program's own flag, whose --strategy names no stage
    ("srun python fit.py --strategy deepspeed --ds_config conf/ds.json",
     {"fit.py": "import lightning as L\nimport torch.distributed.fsdp  # another option\n",
      "conf/ds.json": '{"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}}'}, "zero3"),
    # the program's own switches pick DDP, though its source can also shard (FSDP)
    ("srun python sim.py --use_ddp --cfg base", {"sim.py": "from torch.distributed.fsdp import FullyShardedDataParallel\n"}, "ddp"),
    ("srun python sim.py --use_fsdp true", {"sim.py": "import torch\n"}, "fsdp"),
    ("srun python sim.py --use_fsdp false", {"sim.py": "import torch\n"}, "ddp"),
    # context parallelism over every rank, in the program's own flags, torchtitan's and Megatron's
    ("srun python ring.py --tensor_parallel=1 --context_parallel=8", {"ring.py": "import torch\n"}, "cp"),
    ("srun python ring.py --parallelism.context_parallel_degree 4", {"ring.py": "import torch\n"}, "cp"),
    ("srun python ring.py --tensor_parallel=2 --context_parallel=4", {"ring.py": "import torch\n"}, "3d"),
    ("srun python ring.py --context_parallel=$CP", {"ring.py": "import torch\n"}, None),
    # a switch rather than a degree: on at the program's own degree, or off
    ("srun python ring.py --tensor_parallel --seq 8192", {"ring.py": "import torch\n"}, "tp"),
    ("srun python ring.py --tensor_parallel false", {"ring.py": "import torch\n"}, "ddp"),
    # the DeepSpeed config the program builds for deepspeed.initialize(config=...)
    ("srun python bert_ds.py --out ./ckpt",
     {"bert_ds.py": "import deepspeed\ncfg = {\n    'train_batch_size': 8,\n    'zero_optimization': {\n"
                    "        'stage': 1,\n    },\n}\nengine, *_ = deepspeed.initialize(model=m, config=cfg)\n"}, "zero1"),
])
def test_the_strategy_is_what_the_program_is_given(launch, files, strategy, tmp_path):
    assert read_with_files(PER_GPU + launch + "\n", tmp_path, files).strategy == strategy


def test_an_unreadable_accelerate_config_says_its_strategy_by_its_name_only(tmp_path):
    """accelerate launch --config_file NAME.yaml where the file is not in the checkout: as with a
    DeepSpeed config, its name may say the strategy (zero3.yaml); a name that says nothing leaves it unknown."""
    launch = "srun accelerate launch --config_file {} --num_processes 8 --num_machines 2 tune.py\n"
    assert read_with_files(PER_GPU + launch.format("cfgs/zero3.yaml"), tmp_path, {"tune.py": "import torch\n"}).strategy == "zero3"
    assert read_with_files(PER_GPU + launch.format("cfgs/cluster.yaml"), tmp_path, {}).strategy is None


@pytest.mark.parametrize("launch, files, framework, strategy", [
    # a program that drives its processes through an Accelerator, run by python alone
    ("python main.py fit --lr 3e-4", {"main.py": "import torch\nfrom accelerate import Accelerator\nacc = Accelerator()\n"},
     "accelerate", "single"),
    # Accelerate's utilities alone do not make the program Accelerate's
    ("python main.py fit", {"main.py": "import torch\nfrom accelerate.utils import set_seed\n"}, "pytorch", "single"),
    # Lightning Fabric names its strategy where it is built
    ("python tune.py --d 2", {"tune.py": "import lightning as L\nfabric = L.Fabric(accelerator='cuda', devices=2,\n"
                                         "    strategy='ddp' if True else 'auto', precision='bf16-true')\n"}, "lightning", "ddp"),
    # DataParallel in the trainer module the program imports: one process over the node's GPUs
    ("python run_seg.py", {"run_seg.py": "import torch\nfrom Looper import Looper\n",
                           "Looper.py": "import torch\nclass Looper:\n    def __init__(s, m):\n"
                                        "        s.m = torch.nn.DataParallel(m)\n"}, "pytorch", "dp"),
    # one TensorFlow process computes on the first GPU it sees, unless its code places work itself
    ("python keras_fit.py --epochs=3", {"keras_fit.py": "import tensorflow as tf\nm = tf.keras.Sequential()\n"},
     "tensorflow", "single"),
    ("python towers.py", {"towers.py": "import tensorflow as tf\nfor g in range(4):\n"
                                       "    with tf.device('/gpu:%d' % g):\n        pass\n"}, "tensorflow", None),
])
def test_one_process_on_several_devices(launch, files, framework, strategy, tmp_path):
    intent = read_with_files(FOUR_GPUS + launch + "\n", tmp_path, files)
    assert (intent.framework, intent.strategy) == (framework, strategy)


@pytest.mark.parametrize("override, strategy", [
    ("trainer.strategy=deepspeed_stage_2", "zero2"),
    ("++pl.trainer.strategy=ddp_find_unused_parameters_true", "ddp"),
    ("trainer.strategy=auto", "ddp"),  # Lightning picks: by size, as for any program
])
def test_a_hydra_override_of_the_trainer_strategy_is_read(override, strategy, tmp_path):
    files = {"run.py": "import hydra\nimport lightning.pytorch as pl\n"}
    intent = read_with_files(PER_GPU + f"srun python run.py experiment=big {override} trainer.devices=4\n", tmp_path, files)
    assert (intent.framework, intent.strategy) == ("lightning", strategy)


def test_a_program_named_by_a_site_path_is_read_beside_the_job(tmp_path):
    """The job names its program by the site's absolute path; the checkout holds it beside the job
    script, where its imports say it is a ChainerMN program (its own communicator: no strategy)."""
    launch = "mpirun -np 8 -npernode 4 python /lustre/u42/src/models/imnet/fit_imnet.py --arch r50\n"
    files = {"fit_imnet.py": "import chainer\nimport chainermn\ncomm = chainermn.create_communicator('pure_nccl')\n"}
    intent = read_with_files(PER_GPU + launch, tmp_path, files)
    assert (intent.framework, intent.strategy) == ("chainer", None)


def test_an_accelerate_program_python_starts_alone_stays_one_process(tmp_path):
    """Accelerate without `accelerate launch` runs in the one process python starts: the port takes
    the one-process template, not Accelerate's one-per-device launch (a world of 1 stays 1)."""
    from maple_ci.port import port_intent

    intent = read_with_files(ONE_GPU + "python fit.py --lr 1e-4\n", tmp_path,
                  {"fit.py": "from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='bf16')\n"})
    assert (intent.framework, intent.strategy, intent.world_size) == ("accelerate", "single", 1)
    [result] = port_intent(intent, ["perlmutter"], "job.sh", tmp_path / "out")
    assert result.template.endswith("-single") and "accelerate launch" not in result.script
