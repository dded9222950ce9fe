"""Issue 25, class 5 and E: programs that are not PyTorch are named as what they are (from the
program's imports in the checkout and the launch's words), and a port never runs them under the
site's PyTorch silently: the user's environment (--python-env) or a job that stops at once, with a
header note. One process that uses several devices itself keeps them. Programs written for these
tests, in styles the corpus does not hold (Flax, Keras MirroredStrategy, Horovod with Gloo, vLLM's
server, Ray Tune, fairseq's console script, LLaMA-Factory's module).
"""

import re
from pathlib import Path

import pytest

from maple_ci.extract import extract_script
from maple_ci.intent import JobIntent
from maple_ci.port import port_intent
from maple_ci.profiles import FrameworkSetup, get_profile
from maple_ci.python_env import framework_env

ONE_NODE = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gres=gpu:{gpus}\n#SBATCH -t 02:00:00\n"


def read(text: str, tmp_path: Path, files: dict = {}) -> JobIntent:
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    return extract_script(text, tmp_path, "job.sh", tmp_path)


@pytest.mark.parametrize("launch, files, framework", [
    ("python pretrain.py", {"pretrain.py": "import jax\nimport flax.linen as nn\n"}, "jax"),
    ("python -m mypkg.train", {"mypkg/train.py": "from optax import adamw\n"}, "jax"),
    ("srun -n 1 python fit.py", {"fit.py": "import tensorflow as tf\ns = tf.distribute.MirroredStrategy()\n"}, "tensorflow"),
    ("python fit.py", {"fit.py": "import keras\n"}, "tensorflow"),
    ("horovodrun -np 4 -H localhost:4 --gloo python hvd.py", {"hvd.py": "import torch\n"}, "horovod"),
    ("srun python hvd.py", {"hvd.py": "import torch\nimport horovod.torch as hvd\n"}, "horovod"),
    ("python -m vllm.entrypoints.openai.api_server --model m --tensor-parallel-size 4", {}, "vllm"),
    ("python serve.py", {"serve.py": "import ray\nfrom vllm import LLM\n"}, "vllm"),
    ("python tune.py", {"tune.py": "import ray\nfrom ray import tune\n"}, "ray"),
    ("fairseq-train data-bin/x --arch transformer", {}, "fairseq"),
    ("python -m llamafactory.launcher cfg.yaml", {}, "llamafactory"),
    # a PyTorch program that also imports JAX (a weight converter) is PyTorch's
    ("python convert.py", {"convert.py": "import torch\nimport jax.numpy as jnp\n"}, "pytorch"),
    ("python train.py", {"train.py": "import torch\n# import jax\n"}, "pytorch"),
])
def test_the_framework_is_what_the_program_is(launch, files, framework, tmp_path):
    assert read(ONE_NODE.format(gpus=4) + launch + "\n", tmp_path, files).framework == framework


def test_horovodrun_is_read_by_its_own_grammar(tmp_path):
    """-np ranks in all, -H hosts with slots, --gloo a flag: the program is the word after them."""
    text = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --gres=gpu:4\nhorovodrun -np 8 -H a:4,b:4 --gloo python hvd.py --epochs 2\n"
    intent = read(text, tmp_path, {"hvd.py": "import horovod.tensorflow as hvd\n"})
    assert (intent.launcher, intent.world_size, intent.entrypoint, intent.script_args) == (
        "horovodrun", 8, "hvd.py", ["--epochs", "2"])


def ported(text: str, tmp_path: Path, cluster: str, files: dict, envs: dict = {}) -> str:
    intent = read(text, tmp_path, files)
    [result] = port_intent(intent, [cluster], "job.sh", tmp_path / "out", python_envs=envs)
    assert result.status == "ok", [c.message for c in result.checks if not c.ok]
    return result.script


JAX = {"pretrain.py": "import jax\nprint(jax.devices())\n"}


@pytest.mark.parametrize("cluster", ["perlmutter", "polaris", "frontier", "aurora"])
def test_a_jax_program_without_an_environment_stops_and_says_why(cluster, tmp_path):
    script = ported(ONE_NODE.format(gpus=4) + "python pretrain.py\n", tmp_path, cluster, JAX)
    assert re.search(rf"^# Note: {cluster} provides no jax set-up \(the program is jax, not PyTorch\): port again "
                     r"with --python-env PATH", script, re.M), script
    setup = script[script.index("set -eo pipefail"):script.index("python pretrain.py")]
    stop = re.search(r"^echo 'maple-ci: .*provides no jax set-up.*' >&2; exit 1$", setup, re.M)
    assert stop, setup
    # nothing of the site's PyTorch set-up runs before the stop or at all
    assert not re.search(r"module load (pytorch|frameworks|conda)|conda activate", setup), setup


def test_a_jax_program_runs_in_the_users_environment_in_place_of_the_sites_pytorch(tmp_path):
    script = ported(ONE_NODE.format(gpus=4) + "python pretrain.py\n", tmp_path, "perlmutter", JAX,
                    {"default": "$SCRATCH/envs/jax"})
    assert 'source "$SCRATCH/envs/jax/bin/activate"' in script
    assert "module load pytorch" not in script
    assert "activates your environment, $SCRATCH/envs/jax, in place of the site's PyTorch set-up" in script


def test_a_pytorch_program_with_its_own_package_keeps_the_sites_pytorch_and_adds_the_users(tmp_path):
    text = ONE_NODE.format(gpus=4) + "fairseq-train data-bin/wmt --arch transformer --max-tokens 4096\n"
    script = ported(text, tmp_path, "perlmutter", {}, {"perlmutter": "fairseq-env"})
    start = script.index("set -eo pipefail")  # after the header, whose record names the program too
    setup = script[start:script.index("fairseq-train", start)]
    assert setup.index("module load pytorch") < setup.index("conda activate fairseq-env")
    assert "perlmutter provides no fairseq set-up: the job activates your environment, fairseq-env, after" in script


def test_a_framework_the_profile_provides_uses_that_set_up(tmp_path):
    profile = get_profile("perlmutter")
    with_jax = profile.model_copy(update={"frameworks": {**profile.frameworks,
                                                         "jax": FrameworkSetup(modules=["jax/0.4"])}})
    adapted, note = framework_env(with_jax, "jax", {})
    assert note is None
    assert all(setup.modules == ["jax/0.4"] for setup in adapted.frameworks.values())
    assert framework_env(profile, "deepspeed", {}) == (profile, None)


@pytest.mark.parametrize("cluster, devices", [("perlmutter", 4), ("polaris", 4), ("aurora", 8)])
def test_one_process_on_several_devices_keeps_them(cluster, devices, tmp_path):
    """A single JAX process that uses every device of its node: one process, the source's 8 devices
    (as many as the target node has), never one rank per GPU nor one device."""
    script = ported(ONE_NODE.format(gpus=8) + "python pretrain.py\n", tmp_path, cluster, JAX, {"default": "jaxenv"})
    launch = script.splitlines()[-1]
    assert launch.endswith("python pretrain.py") and not re.search(r"torchrun|--ntasks=[2-9]|-n [2-9]", launch)
    assert re.search(r"^# Job: 1 node\(s\) x 1 ranks = 1 ranks", script, re.M)
    assert f"one process with {devices} devices" in script
    visible = re.search(r"^export (?:CUDA|ZE|ROCR)_VISIBLE_DEVICES=(.*)$", script, re.M)
    assert visible is None or visible.group(1) == ",".join(map(str, range(devices))), visible


def test_a_mirrored_strategy_job_on_four_gpus_asks_for_four(tmp_path):
    text = ONE_NODE.format(gpus=4) + "srun -n 1 python fit.py --epochs 5\n"
    files = {"fit.py": "import tensorflow as tf\nstrategy = tf.distribute.MirroredStrategy()\n"}
    script = ported(text, tmp_path, "perlmutter", files, {"default": "tfenv"})
    assert "#SBATCH --gpus-per-node=4" in script and "#SBATCH --ntasks-per-node=1" in script
    assert re.search(r"srun --nodes=1 --ntasks=1 .*python fit\.py --epochs 5$", script, re.M)


def test_a_one_gpu_program_still_gets_one(tmp_path):
    script = ported(ONE_NODE.format(gpus=1) + "python train.py\n", tmp_path, "polaris", {"train.py": "import torch\n"})
    assert re.search(r"^export CUDA_VISIBLE_DEVICES=0$", script, re.M)
    assert "one process with" not in script


@pytest.mark.parametrize("request_text, framework", [
    ("train a Flax model on 8 GPUs across two nodes", "jax"),
    ("fine-tune with LLaMA-Factory and deepspeed on 4 GPUs", "llamafactory"),
    ("an array of torchrun runs on 2 nodes", "pytorch"),  # "array" holds "ray", not the word
    ("deepspeed zero 3 on 2 nodes", "deepspeed"),
])
def test_a_request_in_words_names_the_framework(request_text, framework):
    from maple_ci.extract import extract_request

    assert extract_request(request_text).framework == framework
