"""The generic family (issue 9, item 6): every profiled cluster runs any torch.distributed program
(Megatron-LM, Lightning, tensor or pipeline parallel PyTorch), one rank per device or one torchrun
per node as the source did; the program's parallelism flags are kept and checked against the new
world size. Intents are written directly, as the extractor would describe such scripts.

Script styles: Megatron-LM's examples/pretrain_gpt_distributed_with_mp.sh
(https://github.com/NVIDIA/Megatron-LM/tree/main/examples), Lightning's "Run on an on-prem
cluster (advanced)" SLURM guide (https://lightning.ai/docs/pytorch/stable/clouds/cluster_advanced.html).
"""

import math
import re

import pytest

from maple_ci.intent import PER_DEVICE_LAUNCHERS, JobIntent
from maple_ci.library import GENERIC, load_templates
from maple_ci.port import port_intent
from maple_ci.profiles import get_profile, load_profiles
from maple_ci.programs import model_parallel, program_notes
from maple_ci.retrieve import best_template, list_templates
from maple_ci.verify.static import static_checks

CLUSTERS = sorted(load_profiles())
# Where OLCF and ALCF document only per-device launchers, the generic family has no torchrun form.
PER_DEVICE_ONLY = {"frontier", "aurora"}
MEGATRON_ARGS = ["--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2", "--num-layers", "24",
                 "--micro-batch-size", "2", "--global-batch-size", "64", "--data-path", "$SCRATCH/gpt2_text_document"]


def _intent(**fields) -> JobIntent:
    base = dict(source_cluster="perlmutter", scheduler="slurm", launcher="torchrun", nodes=2, gpus_per_node=4,
                entrypoint="pretrain_gpt.py", framework="megatron", strategy="3d", script_args=MEGATRON_ARGS)
    return JobIntent(**{**base, **fields}).with_defaults()


def _port(intent: JobIntent, cluster: str, tmp_path):
    return port_intent(intent, [cluster], "pretrain_gpt.sbatch", tmp_path)[0]


def _launch_form(script: str) -> str:
    """"torchrun" when the script starts one torchrun per node, "per-device" when the scheduler's
    launcher starts every rank with torchrun's environment."""
    if re.search(r"^\s*(torchrun|bash -c 'exec torchrun [^\n]*' maple-node) --nnodes=", script, re.M):  # JSC: is_host inside the task
        return "torchrun"
    assert re.search(r"bash -c 'export RANK=\S+ LOCAL_RANK=.+ WORLD_SIZE=.+ LOCAL_WORLD_SIZE=\d+ GROUP_RANK=", script)
    return "per-device"


def _fits(cluster: str, nodes: int = 2) -> bool:
    return nodes * get_profile(cluster).devices_per_node % 4 == 0


def test_every_cluster_has_the_generic_family():
    for cluster in CLUSTERS:
        generic = {t.launcher for t in load_templates() if t.cluster == cluster and t.strategy == GENERIC}
        assert generic & PER_DEVICE_LAUNCHERS, cluster
        assert ("torchrun" in generic) == (cluster not in PER_DEVICE_ONLY), cluster


@pytest.mark.parametrize("cluster", CLUSTERS)
@pytest.mark.parametrize("launcher", ["torchrun", "srun"])
def test_megatron_ports_everywhere_with_its_flags_kept(cluster, launcher, tmp_path):
    nodes = 2 if _fits(cluster) else 4  # TP 2 x PP 2 needs a multiple of 4 ranks (Lonestar6: 3 GPUs, Vista: 1)
    result = _port(_intent(launcher=launcher, nodes=nodes), cluster, tmp_path)
    assert result.status == "ok", [c for c in result.checks if not c.ok]
    assert result.template.endswith("-generic" if launcher == "srun" or cluster in PER_DEVICE_ONLY else "-generic-torchrun")
    assert _launch_form(result.script) == ("torchrun" if result.template.endswith("-torchrun") else "per-device")
    assert ("pretrain_gpt.py --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --num-layers 24 "
            '--micro-batch-size 2 --global-batch-size 64 --data-path "$SCRATCH/gpt2_text_document"') in result.script
    world = nodes * get_profile(cluster).devices_per_node
    assert f"# Note: the program's parallel sizes are kept (tensor 2 x pipeline 2 = 4): {world} ranks give data " \
           f"parallel size {world // 4}" in result.script
    assert any(c.name == "model-parallel" and c.ok for c in result.checks)


@pytest.mark.parametrize("cluster, suggested", [("lonestar6", 4), ("vista", 4), ("perlmutter", 3)])
def test_model_parallel_that_does_not_divide_gets_the_node_count_that_works(cluster, suggested, tmp_path):
    # Perlmutter: TP 4 x PP 3 = 12 over 2 x 4 GPUs; 3 nodes (12 ranks) is the smallest count that works.
    args = MEGATRON_ARGS if cluster != "perlmutter" else ["--tensor-model-parallel-size=4",
                                                          "--pipeline-model-parallel-size=3"]
    result = _port(_intent(script_args=args), cluster, tmp_path)
    devices = get_profile(cluster).devices_per_node
    assert result.status == "ok" and f"#SBATCH --nodes={suggested}\n" in result.script
    assert (f"model-parallel ranks need a world size that is a multiple of {math.prod(model_parallel(args).values())}: "
            f"2 node(s) of {devices} devices become {suggested}") in result.script
    # The check still stops a script edited back to a size Megatron cannot start with.
    edited = result.script.replace(f"#SBATCH --nodes={suggested}\n", "#SBATCH --nodes=2\n")
    [check] = [c for c in static_checks(edited, _intent(script_args=args), get_profile(cluster))
               if not c.ok and c.severity == "error"]
    assert check.name == "model-parallel" and f"port with --nodes {suggested}," in check.message


def test_global_batch_size_that_does_not_fit_the_new_data_parallel_size_is_noted(tmp_path):
    # Frontier: 2 nodes x 8 GCDs = 16 ranks, TP x PP = 4, so data parallel 4 x micro batch 2 = 8.
    args = [*MEGATRON_ARGS[:-4], "--global-batch-size", "36"]
    script = _port(_intent(script_args=args), "frontier", tmp_path).script
    assert ("# Note: global batch size 36 is not a multiple of data parallel size 4 x micro batch size 2 = 8; "
            "Megatron refuses that: use a multiple of 8") in script
    assert "global batch size" not in _port(_intent(), "frontier", tmp_path).script


@pytest.mark.parametrize("cluster", CLUSTERS)
@pytest.mark.parametrize("launcher", ["torchrun", "srun"])
def test_lightning_is_started_one_rank_per_device_by_the_scheduler(cluster, launcher, tmp_path):
    profile = get_profile(cluster)
    intent = _intent(framework="lightning", strategy="ddp", launcher=launcher, entrypoint="train_lightning.py",
                     script_args=["--trainer.max_epochs", "3"])
    result = _port(intent, cluster, tmp_path)
    assert result.status == "ok", [c for c in result.checks if not c.ok]
    assert _launch_form(result.script) == "per-device" and not re.search(r"^[^#]*torchrun", result.script, re.M)
    devices = profile.devices_per_node
    if profile.scheduler == "slurm":  # TACC's bases give the total task count instead
        tasks = "--ntasks=%d" % (2 * devices) if cluster in ("lonestar6", "stampede3", "vista") else f"--ntasks-per-node={devices}"
        assert f"#SBATCH {tasks}\n" in result.script
    assert "export MASTER_ADDR" in result.script and re.search(r"^export MASTER_PORT=\d+$", result.script, re.M)
    assert f"Trainer(devices=..., num_nodes=...) must be {devices} and 2 here" in result.script
    assert "train_lightning.py --trainer.max_epochs 3" in result.script
    if launcher == "torchrun":  # a process model the port changes on purpose: the header says why
        assert "Lightning's cluster environments expect the scheduler to start every rank" in result.script


def test_lightning_device_arguments_that_disagree_are_noted_not_rewritten(tmp_path):
    # a plain --devices is the program's own: noted, left as written
    args = ["--devices", "8", "--trainer.num_nodes=2"]
    script = _port(_intent(framework="lightning", strategy=None, entrypoint="main.py", script_args=args),
                   "perlmutter", tmp_path).script
    assert "the script's arguments give devices 8, left as written: change them" in script
    assert "main.py --devices 8 --trainer.num_nodes=2" in script
    # LightningCLI's documented --trainer.devices follows the port's ranks per node (issue 25 class 4)
    script = _port(_intent(framework="lightning", strategy=None, entrypoint="main.py",
                           script_args=["--trainer.devices", "8", "--trainer.num_nodes=2"]), "perlmutter", tmp_path).script
    assert "main.py --trainer.devices 4 --trainer.num_nodes=2" in script and "left as written" not in script
    agreeing = _port(_intent(framework="lightning", strategy=None, entrypoint="main.py", script_args=["--devices=4"]),
                     "perlmutter", tmp_path).script
    assert "left as written" not in agreeing


@pytest.mark.parametrize("cluster", CLUSTERS)
@pytest.mark.parametrize("strategy", ["tp", "3d"])
def test_pytorch_tensor_and_3d_parallel_use_the_generic_family(cluster, strategy, tmp_path):
    intent = _intent(framework="pytorch", strategy=strategy, entrypoint="train_tp.py", script_args=["--tp", "2"])
    result = _port(intent, cluster, tmp_path)
    assert result.status == "ok" and result.template.startswith(f"{cluster}-generic")
    assert _launch_form(result.script) == ("per-device" if cluster in PER_DEVICE_ONLY else "torchrun")


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_the_frameworks_own_templates_still_win_their_strategies(cluster):
    """The generic family replaces a template made for the framework and strategy only to keep the
    source's process model (issue 16): a torchrun job on Anvil, whose DDP template is srun per GPU,
    gets the generic torchrun form."""
    per_node = lambda t: t.launcher not in PER_DEVICE_LAUNCHERS  # noqa: E731
    for launcher in ("torchrun", "srun"):
        for framework, strategy in [("pytorch", "ddp"), ("pytorch", "fsdp"), ("pytorch", None), ("deepspeed", "zero3"),
                                    ("deepspeed", "zero2"), ("accelerate", "ddp"), ("accelerate", "fsdp")]:
            intent = _intent(framework=framework, strategy=strategy, script_args=[], launcher=launcher)
            template = best_template(intent, cluster)
            why = (launcher, framework, strategy, template.id)
            if template.strategy != GENERIC:
                assert template.framework == framework, why
                continue
            own = [t for t in list_templates(cluster, framework) if t.strategy == (strategy or "ddp") and t.supported]
            assert framework == "pytorch" and per_node(template) == (launcher == "torchrun"), why
            assert own and not any(per_node(t) == per_node(template) for t in own), why


def test_parallel_sizes_are_read_in_megatron_nemo_and_torchtitan_spellings():
    assert model_parallel(["--tensor-model-parallel-size=2", "--pipeline-model-parallel-size", "4"]) == \
        {"tensor": 2, "pipeline": 4}
    assert model_parallel(["model.tensor_model_parallel_size=2", "model.context_parallel_size=2"]) == \
        {"tensor": 2, "context": 2}
    assert model_parallel(["--parallelism.tensor_parallel_degree", "8", "--parallelism.pipeline_parallel_degree=1"]) \
        == {"tensor": 8}
    # Unknown values ($TP) and sizes of 1 set no constraint; later flags win, as in argparse.
    assert model_parallel(["--tensor-model-parallel-size", "$TP", "--pipeline-model-parallel-size", "1"]) == {}
    assert model_parallel(["--tensor-model-parallel-size", "2", "--tensor-model-parallel-size", "4"]) == {"tensor": 4}
    assert program_notes(["--pipeline-model-parallel-size", "1"], "megatron", 2, 4) == []


def test_sizes_chosen_at_submit_time_get_the_rule_instead_of_numbers(tmp_path):
    """`sbatch -N <n> job.sh`: the node count is the user's, so the notes say what it must satisfy."""
    script = _port(_intent(nodes=None, gpus_per_node=None), "lonestar6", tmp_path).script
    assert ("# Note: the program's parallel sizes are kept (tensor 2 x pipeline 2 = 4): choose a node count whose "
            "3 ranks per node make a multiple of 4") in script
    lightning = _port(_intent(framework="lightning", nodes=None, gpus_per_node=None), "polaris", tmp_path).script
    assert "Trainer(devices=..., num_nodes=...) must be 4 and the allocation's node count here" in lightning
