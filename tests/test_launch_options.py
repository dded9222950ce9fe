"""Issue 25, classes 3, 4 and 6: a launcher option that changes what the program does is carried in
the target's form or named in the header; arguments that hold the node shape follow the port (where
their meaning is documented) or are named; a port that starts the program another way says so.
The scripts are written in styles the corpus (tests/data/real) does not hold: options in a bash
array, `python -m accelerate.commands.launch`, a Hydra/NeMo command line, a qsub -v rendezvous."""

import re

import pytest

from maple_ci.extract import extract_script
from maple_ci.launchers import DL_LAUNCHERS, launcher, parse_options
from maple_ci.library import get_template
from maple_ci.profiles import get_profile
from maple_ci.synthesize import render
from maple_ci.verify.readback import readback_checks
from maple_ci.verify.static import checks_ok, static_checks

FSDP_BF16 = """#!/bin/bash
#SBATCH --nodes=2
#SBATCH --gpus-per-node=4
#SBATCH --time=02:00:00
ACC=(--num_machines 2 --num_processes 8 --machine_rank "$SLURM_NODEID" --main_process_ip "$head"
     --mixed_precision bf16 --use_fsdp --fsdp_sharding_strategy HYBRID_SHARD
     --fsdp_auto_wrap_policy TRANSFORMER_BASED_WRAP --fsdp_transformer_layer_cls_to_wrap LlamaDecoderLayer)
head=$(scontrol show hostnames | head -n1)
srun --ntasks-per-node=1 python -m accelerate.commands.launch "${ACC[@]}" train.py --model llama
"""


def port(text: str, template_id: str) -> tuple[str, list[str]]:
    """The port of `text` with one template, after the static and read-back checks; (script, notes)."""
    intent = extract_script(text)
    template = get_template(template_id)
    profile = get_profile(template.cluster)
    script = render(intent, profile, template, "jobs/train.sh")
    checks = static_checks(script, intent, profile) + readback_checks(script, intent, profile, template, text)
    assert checks_ok(checks), [c for c in checks if not c.ok]
    return script, [line[len("# Note: "):] for line in script.splitlines() if line.startswith("# Note: ")]


def launch_line(script: str) -> str:
    """The launch command, its continuation lines joined."""
    return script.split("export MASTER_PORT=")[1].replace("\\\n", " ")


def test_accelerate_precision_and_wrap_policy_ride_on_the_targets_accelerate_launch():
    script, _ = port(FSDP_BF16, "perlmutter-accelerate-fsdp")
    line = launch_line(script)
    for word in ("--mixed_precision=bf16", "--fsdp_sharding_strategy=HYBRID_SHARD",
                 "--fsdp_auto_wrap_policy=TRANSFORMER_BASED_WRAP", "--fsdp_transformer_layer_cls_to_wrap=LlamaDecoderLayer"):
        assert word in line
    assert "SIZE_BASED_WRAP" not in script  # the template's default gives way to the source's policy


@pytest.mark.parametrize("template_id", ["frontier-accelerate-fsdp", "aurora-accelerate-fsdp"])
def test_without_accelerate_launch_the_options_become_the_variables_it_would_set(template_id):
    script, notes = port(FSDP_BF16, template_id)
    exports = dict(re.findall(r"^export (\w+)=(\S+)$", script, re.M))
    assert exports["ACCELERATE_MIXED_PRECISION"] == "bf16"  # else training silently runs in fp32
    assert exports["FSDP_SHARDING_STRATEGY"] == "HYBRID_SHARD"
    assert exports["FSDP_AUTO_WRAP_POLICY"] == "TRANSFORMER_BASED_WRAP"
    assert exports["FSDP_TRANSFORMER_CLS_TO_WRAP"] == "LlamaDecoderLayer"
    assert "SIZE_BASED_WRAP" not in script
    assert any("ACCELERATE_MIXED_PRECISION=bf16" in note for note in notes)


def test_an_accelerate_config_files_settings_become_variables_where_no_accelerate_launch_reads_it(tmp_path):
    (tmp_path / "fsdp.yaml").write_text("distributed_type: FSDP\nmixed_precision: BF16\nnum_machines: 2\n"
                                        "fsdp_config:\n  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                                        "  fsdp_offload_params: true\n  version: 2\n")  # accelerate reads it as fsdp_version
    text = """#!/bin/bash
#SBATCH --nodes=2 --gpus-per-node=4 --time=01:00:00
srun --ntasks-per-node=1 accelerate launch --config_file fsdp.yaml --mixed_precision fp16 train.py
"""
    intent = extract_script(text, tmp_path, "job.sh", tmp_path)
    template = get_template("frontier-accelerate-fsdp")
    script = render(intent, get_profile("frontier"), template, "jobs/train.sh")
    exports = dict(re.findall(r"^export (\w+)=(\S+)$", script, re.M))
    assert exports["ACCELERATE_MIXED_PRECISION"] == "fp16"  # the line wins over the file, as in accelerate
    assert extract_script(text.replace(" --mixed_precision fp16", ""), tmp_path, "job.sh", tmp_path).config_options[
        "mixed_precision"] == "bf16"
    assert (exports["FSDP_AUTO_WRAP_POLICY"], exports["FSDP_OFFLOAD_PARAMS"], exports["FSDP_VERSION"]) == (
        "TRANSFORMER_BASED_WRAP", "true", "2")
    assert "SIZE_BASED_WRAP" not in script
    # where accelerate launch runs, it reads the file itself: only the line's option is added
    script = render(intent, get_profile("perlmutter"), get_template("perlmutter-accelerate-fsdp"), "jobs/train.sh")
    assert "--config_file fsdp.yaml" in launch_line(script) and "--mixed_precision=fp16" in launch_line(script)
    assert "FSDP_" not in script


def test_accelerate_zero_stage_two_is_not_turned_into_three():
    text = FSDP_BF16.replace("--use_fsdp --fsdp_sharding_strategy HYBRID_SHARD", "--use_deepspeed --zero_stage 2")
    text = text.replace("--fsdp_auto_wrap_policy TRANSFORMER_BASED_WRAP --fsdp_transformer_layer_cls_to_wrap LlamaDecoderLayer",
                        "--gradient_accumulation_steps 8")
    script, _ = port(text, "perlmutter-accelerate-zero3")
    line = launch_line(script)
    assert "--zero_stage=2" in line and "--zero_stage=3" not in line
    assert "--gradient_accumulation_steps=8" in line


TORCHRUN_RESTARTS = """#!/bin/bash
#SBATCH -N 2 --gpus-per-node=4 -t 1:00:00
srun -N2 --ntasks-per-node=1 python -m torch.distributed.run --nnodes=2 --nproc-per-node=4 --max-restarts=3 \\
    --rdzv-backend=c10d --rdzv-endpoint="$(hostname):29400" --frobnicate=yes train.py --lr 1e-3
"""


def test_torchrun_behaviour_options_are_carried_on_torchrun_and_named_elsewhere():
    script, notes = port(TORCHRUN_RESTARTS, "perlmutter-pytorch-ddp-torchrun")
    assert "--max_restarts=3" in launch_line(script)
    assert any("--frobnicate=yes" in note and "not carried" in note for note in notes)  # unknown: named, not dropped
    script, notes = port(TORCHRUN_RESTARTS, "frontier-pytorch-ddp")
    assert "max_restarts" not in launch_line(script)
    assert any("--max_restarts=3" in note and "not carried" in note for note in notes)


def test_torchrun_without_nproc_per_node_starts_one_worker_and_the_port_says_it_changes():
    text = """#!/bin/bash
#SBATCH --nodes=2 --gres=gpu:4 --time=01:00:00
srun --ntasks-per-node=1 torchrun --nnodes 2 --rdzv-backend c10d --rdzv-endpoint "$MASTER_ADDR:29500" train.py
"""
    intent = extract_script(text)
    assert (intent.nodes, intent.world_size) == (2, 2)  # torchrun's default: one worker per node
    _, notes = port(text, "perlmutter-pytorch-ddp-torchrun")
    assert any("1 process(es) per node (torchrun's default" in note for note in notes)


def test_a_launcher_read_with_torchruns_grammar_does_not_take_torchruns_default():
    text = """#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=1 --gpus-per-node=4 -t 1:00:00
srun fabric run --accelerator=cuda --devices=4 --num-nodes=2 train.py
"""
    assert extract_script(text).world_size == 8  # fabric's --devices, not torchrun's one worker


def test_one_process_per_node_that_drives_the_nodes_gpus_is_named():
    text = """#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=1 --gpus-per-node=4 --time=01:00:00
srun python train.py --data-parallel
"""
    _, notes = port(text, "polaris-pytorch-ddp")
    assert any(note.startswith("the source starts 1 process(es) per node on nodes of 4 GPUs") for note in notes)


def test_a_fixed_task_count_left_to_an_allocation_names_the_world_size_change():
    text = """#!/bin/bash
#SBATCH -n 2 --gres=gpu:1 -t 01:00:00
srun python train.py
"""
    _, notes = port(text, "perlmutter-pytorch-ddp")  # 2 ranks in all become 4 on the default one node
    assert any(note.startswith("world size changes from 2 to 4 (1 node(s) unless chosen at submit time") for note in notes)


def test_a_rendezvous_of_separately_submitted_jobs_is_named():
    text = """#!/bin/bash
#PBS -l select=1:ngpus=4
#PBS -l walltime=01:00:00
cd "$PBS_O_WORKDIR"
torchrun --nnodes="$NUMNODES" --node_rank="$NODE_RANK" --nproc_per_node=4 --master_addr="$IP_ADDRESS" train.py
"""
    _, notes = port(text, "perlmutter-pytorch-ddp-torchrun")
    assert any("rendezvous" in note and "--node_rank=$NODE_RANK" in note and "submit it once" in note for note in notes)
    # a node rank from srun's own task variable is a job that starts every node itself
    _, notes = port(FSDP_BF16, "perlmutter-accelerate-fsdp")
    assert not any("rendezvous" in note for note in notes)


def test_deepspeeds_local_rank_argument_is_named_where_the_port_starts_ranks_without_it():
    text = """#!/bin/bash
#SBATCH -N 1 --gpus-per-node=4 -t 1:00:00
deepspeed --num_gpus 4 train.py --deepspeed_config ds.json
"""
    _, notes = port(text, "perlmutter-deepspeed-zero3")
    assert any("--local_rank=N" in note for note in notes)
    _, notes = port(text.replace("deepspeed --num_gpus", "deepspeed --no_local_rank --num_gpus"), "perlmutter-deepspeed-zero3")
    assert not any("--local_rank=N" in note for note in notes)


def test_hydra_trainer_sizes_follow_the_port_and_pass_the_read_back_gate():
    text = """#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=4 --gpus-per-node=4 --time=04:00:00
srun python pretrain.py ++trainer.devices=4 trainer.num_nodes=2 model.micro_batch_size=4
"""
    script, notes = port(text, "aurora-pytorch-ddp")  # 12 devices per node: ranks per node change
    assert "++trainer.devices=12 trainer.num_nodes=2 model.micro_batch_size=4" in launch_line(script)
    assert any("++trainer.devices is set to the port's ranks per node: 4 -> 12" in note for note in notes)


def test_plain_shape_arguments_are_named_not_rewritten():
    text = """#!/bin/bash
#SBATCH --nodes=16 --ntasks-per-node=4 --gres=gpu:4 --time=02:00:00
srun python train.py --num_gpus 4 --num-nodes 16 --batch 4
"""
    script, notes = port(text, "aurora-pytorch-ddp")
    assert "--num_gpus 4 --num-nodes 16 --batch 4" in launch_line(script)
    assert any(note.startswith("the program's argument --num_gpus 4 is the source's ranks per node; the port has 12")
               for note in notes)
    assert not any("--num-nodes" in note or "--batch" in note for note in notes)  # the nodes are kept; batch is no size


@pytest.mark.parametrize("name", sorted(DL_LAUNCHERS))
def test_each_option_has_one_place_and_flags_do_not_take_the_program(name):
    entry = launcher(name)
    behaviour = {option for option, _ in entry.behaviour}
    assert not (entry.placement & entry.mode or entry.placement & behaviour or entry.mode & behaviour)
    flags = sorted(option for option in entry.placement | entry.mode | behaviour if option in entry.spec.flags)
    opts, rest = parse_options([f"--{flag}" for flag in flags] + ["train.py", "--x"], entry.spec)
    assert rest == ["train.py", "--x"] and set(opts) == set(flags)


def test_the_trace_an_independent_reader_finds_no_unnamed_difference_in_the_options(tmp_path):
    """maple trace runs source and port in bash on emulated allocations; the port's accelerate settings
    (flags on accelerate launch, or the workers' variables under mpiexec) match the source's."""
    from maple_ci.trace import trace_script
    from maple_ci.trace.compare import compare, header_of

    text = """#!/bin/bash
#SBATCH --nodes=2 --gpus-per-node=4 --time=02:00:00
export HEAD=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
srun --ntasks-per-node=1 bash -c 'accelerate launch --num_machines 2 --num_processes 8 --machine_rank $SLURM_NODEID \\
  --main_process_ip $HEAD --mixed_precision bf16 --use_fsdp --fsdp_auto_wrap_policy TRANSFORMER_BASED_WRAP train.py'
"""
    (tmp_path / "train.py").write_text("")
    (tmp_path / "job.sbatch").write_text(text)
    source = trace_script(tmp_path / "job.sbatch")
    for template_id in ("perlmutter-accelerate-fsdp", "aurora-accelerate-fsdp"):
        script, _ = port(text, template_id)
        ported = trace_script(tmp_path / "job.sbatch", cluster=template_id.split("-")[0], nodes=2, text=script)
        assert compare(source, ported, header_of(script)) == [], template_id
