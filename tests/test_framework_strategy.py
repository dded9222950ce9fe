"""Issue 25: the strategy of a program outside PyTorch's family is said in its framework's own words
(tf.distribute's MirroredStrategy / MultiWorkerMirroredStrategy, LLaMA-Factory's DeepSpeed config),
never by PyTorch's size rule: a Horovod or Ray job of several processes is not "ddp". Programs whose
processes are replicas by default (fairseq's pytorch_ddp backend, LLaMA-Factory without DeepSpeed,
multi-process JAX) keep PyTorch's reading. One process on one device is "single" in any framework. Scripts and programs written for these tests in
styles the corpus does not hold (an MPI-launched Keras Horovod job, JAX processes under srun, TF's
experimental MultiWorkerMirroredStrategy, a LLaMA-Factory YAML naming its ZeRO-3 config).
"""

import re

import pytest

from maple_ci.port import port_intent

from checkout import read_with_files

TWO_NODES = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gres=gpu:4\n#SBATCH -t 01:00:00\n"
ONE_GPU = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gres=gpu:1\n#SBATCH -t 01:00:00\n"
PER_NODE = "#!/bin/bash\n#SBATCH -N 4\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:4\n#SBATCH -t 01:00:00\n"


@pytest.mark.parametrize("header, launch, files, strategy", [
    # TensorFlow: the strategy class the program constructs
    (PER_NODE, "srun python mwms.py", {"mwms.py": "import tensorflow as tf\n"
                                        "s = tf.distribute.experimental.MultiWorkerMirroredStrategy()\n"},
     "multi_worker_mirrored"),
    (ONE_GPU.replace("gpu:1", "gpu:4"), "python fit.py", {"fit.py": "from tensorflow import distribute\n"
                                                         "s = distribute.MirroredStrategy(['/gpu:0', '/gpu:1'])\n"},
     "mirrored"),
    (TWO_NODES, "srun python tf_plain.py", {"tf_plain.py": "import tensorflow as tf\n"}, None),
    # Horovod, Ray: their parallelism is the program's own, not PyTorch DDP
    (TWO_NODES, "mpirun -np 8 -npernode 4 python keras_hvd.py",
     {"keras_hvd.py": "import horovod.tensorflow.keras as hvd\nhvd.init()\n"}, None),
    (TWO_NODES, "python driver.py", {"driver.py": "import ray\nray.init(address='auto')\n"}, None),
    # replicas by default: PyTorch's reading
    (TWO_NODES, "srun python shard.py", {"shard.py": "import jax\njax.distributed.initialize()\n"}, "ddp"),
    (TWO_NODES, "srun fairseq-train data-bin/wmt --arch transformer", {}, "ddp"),
    # one process on one device runs nothing in parallel, whatever its framework
    (ONE_GPU, "python one.py", {"one.py": "import jax.numpy as jnp\n"}, "single"),
    (ONE_GPU, "python one_tf.py", {"one_tf.py": "import keras\n"}, "single"),
])
def test_a_non_pytorch_strategy_is_its_frameworks_word(header, launch, files, strategy, tmp_path):
    intent = read_with_files(header + launch + "\n", tmp_path, files)
    assert intent.framework != "pytorch"
    assert intent.strategy == strategy


def test_llamafactory_reads_the_zero_stage_its_yaml_names(tmp_path):
    """llamafactory-cli train cfg.yaml: the YAML's `deepspeed` key names the DeepSpeed config."""
    files = {"cfg/sft.yaml": "model_name_or_path: m\nstage: sft\ndeepspeed: ds/z3.json\n",
             "ds/z3.json": '{"zero_optimization": {"stage": 3}}'}
    intent = read_with_files(TWO_NODES.replace("4\n#SBATCH --gres", "1\n#SBATCH --gres") + "FORCE_TORCHRUN=1 llamafactory-cli train cfg/sft.yaml\n",
                  tmp_path, files)
    assert (intent.framework, intent.strategy) == ("llamafactory", "zero3")


def test_llamafactory_without_a_deepspeed_key_is_data_parallel(tmp_path):
    files = {"cfg/lora.yaml": "model_name_or_path: m\nfinetuning_type: lora\n"}
    intent = read_with_files(TWO_NODES + "srun llamafactory-cli train cfg/lora.yaml\n", tmp_path, files)
    assert (intent.framework, intent.strategy) == ("llamafactory", "ddp")


def test_a_horovod_job_ports_one_rank_per_gpu(tmp_path):
    """No strategy of PyTorch's: the port keeps the source's process model, 8 ranks on 2 nodes."""
    intent = read_with_files(TWO_NODES + "srun python hvd_train.py --epochs 3\n", tmp_path,
                  {"hvd_train.py": "import horovod.torch as hvd\nhvd.init()\n"})
    [result] = port_intent(intent, ["perlmutter"], "job.sh", tmp_path / "out", python_envs={"default": "hvdenv"})
    assert result.status == "ok", result.message
    assert re.search(r"^# Job: 2 node\(s\) x 4 ranks = 8 ranks", result.script, re.M)
    assert result.script.rstrip().endswith("python hvd_train.py --epochs 3")


def test_a_multi_worker_mirrored_job_keeps_one_worker_per_rank_it_launches(tmp_path):
    files = {"mwms.py": "import tensorflow as tf\ns = tf.distribute.MultiWorkerMirroredStrategy()\n"}
    intent = read_with_files(PER_NODE + "srun python mwms.py\n", tmp_path, files)
    [result] = port_intent(intent, ["perlmutter"], "job.sh", tmp_path / "out", python_envs={"default": "tfenv"})
    assert result.status == "ok", result.message
    assert "python mwms.py" in result.script.splitlines()[-1]
