"""Issue 25, class 5 and E, continued: ChainerMN, MXNet, PaddlePaddle and SGLang are named as what
they are (from the program's imports in the checkout, or the module the launch runs), never read as
PyTorch; their ports need the user's environment and say so. One inference-engine process (vLLM,
SGLang) with tensor parallelism forks its GPU workers itself: the port starts one process with the
node's devices, never one server per GPU. Programs written for these tests, in styles the corpus
does not hold (a Chainer updater under srun, Gluon's trainer, Paddle's launcher module, an SGLang
router, the vLLM server's short -tp).
"""

import re
from pathlib import Path

import pytest

from maple_ci.extract import extract_request, extract_script
from maple_ci.port import port_intent

FOUR_GPUS = "#!/bin/bash\n#SBATCH -N {nodes}\n#SBATCH --ntasks-per-node={tasks}\n#SBATCH --gres=gpu:4\n#SBATCH -t 01:00:00\n"


def read(tmp_path: Path, launch: str, files: dict, nodes: int = 1, tasks: int = 1):
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    return extract_script(FOUR_GPUS.format(nodes=nodes, tasks=tasks) + launch + "\n", tmp_path, "job.sh", tmp_path)


@pytest.mark.parametrize("launch, files, framework", [
    ("srun python updater.py --gpu", {"updater.py": "from chainer import training\nimport chainermn\n"}, "chainer"),
    ("python gluon_fit.py", {"gluon_fit.py": "import mxnet as mx\nfrom mxnet import gluon\n"}, "mxnet"),
    ("python seg.py", {"seg.py": "from gluoncv.model_zoo import get_model\n"}, "mxnet"),
    ("python -m paddle.distributed.launch --gpus 0,1,2,3 finetune.py", {"finetune.py": "import paddle\n"}, "paddle"),
    ("python ernie.py", {"ernie.py": "from paddlenlp.transformers import AutoModel\n"}, "paddle"),
    ("python3 -m sglang.launch_server --model-path org/m --tp 4", {}, "sglang"),
    ("python -m sglang_router.launch_server --model-path org/m --dp 2 --tp 2", {}, "sglang"),
    ("python bench.py", {"bench.py": "import sglang as sgl\n"}, "sglang"),
    # Horovod over MXNet is Horovod's; a PyTorch program that loads a Chainer checkpoint is PyTorch's
    ("srun python hvd_mx.py", {"hvd_mx.py": "import mxnet as mx\nimport horovod.mxnet as hvd\n"}, "horovod"),
    ("python port_weights.py", {"port_weights.py": "import torch\nimport chainer\n"}, "pytorch"),
])
def test_the_framework_is_read_from_the_programs_imports_or_module(launch, files, framework, tmp_path):
    assert read(tmp_path, launch, files).framework == framework


@pytest.mark.parametrize("words, framework", [
    ("serve Llama with SGLang on 8 GPUs", "sglang"),
    ("ChainerMN training on 2 nodes", "chainer"),
    ("an MXNet job on 4 GPUs", "mxnet"),
    ("PaddlePaddle fine-tuning on one node", "paddle"),
])
def test_a_request_in_words_names_these_frameworks(words, framework):
    assert extract_request(words).framework == framework


@pytest.mark.parametrize("launch, strategy", [
    ("python -m sglang.launch_server --model-path org/m --tp 4", "tp"),
    ("python -m sglang.launch_server --model-path org/m --tp-size 2 --pp-size 2", "tp+pp"),
    ("python -m sglang.launch_server --model-path org/m", "single"),
    ("python -m vllm.entrypoints.openai.api_server --model org/m -tp 4", "tp"),
])
def test_an_engines_parallel_sizes_are_its_strategy(launch, strategy, tmp_path):
    assert read(tmp_path, launch, {}).strategy == strategy


def ported(tmp_path: Path, launch: str, files: dict, envs: dict, nodes: int = 1, tasks: int = 1,
           cluster: str = "perlmutter") -> str:
    intent = read(tmp_path, launch, files, nodes, tasks)
    [result] = port_intent(intent, [cluster], "job.sh", tmp_path / "out", python_envs=envs)
    assert result.status == "ok", [c.message for c in result.checks if not c.ok]
    return result.script


@pytest.mark.parametrize("launch, files, framework, why", [
    ("srun python updater.py", {"updater.py": "import chainermn\n"}, "chainer", "the program is chainer, not PyTorch"),
    ("python gluon_fit.py", {"gluon_fit.py": "import mxnet\n"}, "mxnet", "the program is mxnet, not PyTorch"),
    ("python -m sglang.launch_server --model-path org/m", {}, "sglang", "the program needs sglang besides PyTorch"),
])
@pytest.mark.parametrize("cluster", ["perlmutter", "frontier", "aurora"])
def test_a_port_without_the_users_environment_stops_and_says_why(launch, files, framework, why, cluster, tmp_path):
    script = ported(tmp_path, launch, files, {}, tasks=4 if launch.startswith("srun") else 1, cluster=cluster)
    assert f"# Note: {cluster} provides no {framework} set-up ({why}): port again with --python-env PATH" in script
    body = script[script.index("set -eo pipefail"):]
    assert re.search(rf"^echo 'maple-ci: .*provides no {framework} set-up.*' >&2; exit 1$", body, re.M), body


def test_a_chainer_port_runs_in_the_users_environment_in_place_of_the_sites_pytorch(tmp_path):
    script = ported(tmp_path, "srun python updater.py --gpu", {"updater.py": "import chainer\nimport chainermn\n"},
                    {"default": "$SCRATCH/chainer-env"}, nodes=2, tasks=4)
    assert 'source "$SCRATCH/chainer-env/bin/activate"' in script and "module load pytorch" not in script
    launch = script[script.index("\nsrun "):]
    assert "--ntasks-per-node=4" in launch and launch.rstrip().endswith("python updater.py --gpu"), launch


@pytest.mark.parametrize("launch", ["python -m sglang.launch_server --model-path org/m --tp 4",
                                    "vllm serve org/m --tensor-parallel-size 4"])
def test_one_engine_process_with_tensor_parallelism_stays_one_process_on_the_nodes_gpus(launch, tmp_path):
    script = ported(tmp_path, launch, {}, {"default": "engine-env"})
    line = next(line for line in script.splitlines() if line.startswith("srun"))
    assert "--ntasks=1" in line and "--ntasks-per-node" not in line, line
    assert "#SBATCH --gpus-per-node=4" in script
    assert "one process with 4 devices" in script


@pytest.mark.parametrize("launch, files, strategy", [
    # the YAML is the strategy's source: outside the checkout, or given at submit time, it is unknown
    ("srun llamafactory-cli train ~/recipes/sft.yaml", {}, None),
    ('deepspeed --num_gpus 4 lf/train.py "$@"', {"lf/train.py": "from llamafactory.train.tuner import run_exp\n"}, None),
    # a YAML without a deepspeed key, or the training arguments on the line: torchrun's DDP
    ("srun llamafactory-cli train sft.yaml", {"sft.yaml": "stage: sft\nfinetuning_type: lora\n"}, "ddp"),
    ("srun llamafactory-cli train --stage sft --finetuning_type lora", {}, "ddp"),
])
def test_llamafactory_strategy_comes_from_the_config_it_can_read(launch, files, strategy, tmp_path):
    intent = read(tmp_path, launch, files, nodes=2, tasks=4)
    assert (intent.framework, intent.strategy) == ("llamafactory", strategy)


def test_the_engines_whose_sizes_are_read_are_the_ones_kept_as_one_process():
    from maple_ci.extract.ray_cluster import ENGINE_SIZES
    from maple_ci.intent import ENGINES

    assert set(ENGINE_SIZES) == ENGINES
