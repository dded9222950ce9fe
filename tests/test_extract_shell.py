"""Extraction reads a script as bash would run it (issue 9, item 1), and reads nothing outside the
checkout (issue 10, finding 3). Each script is a small form seen in public launch scripts; the
corpus in tests/data/real has them in full."""

import json
import os
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from maple_ci.extract import extract, extract_script


def intent_of(body: str, **where):
    return extract_script("#!/bin/bash\n#SBATCH -N 2 --gpus-per-node=4\n" + body, **where)


@pytest.mark.parametrize("body", [
    # a string run through bash -c, an unquoted variable, eval, a function with "$@"
    'CMD="python -u train.py --lr 3e-4 --data $SCRATCH/d"\nsrun bash -c "$CMD"\n',
    'PROGRAM="train.py --lr 3e-4 --data $SCRATCH/d"\nsrun python -u $PROGRAM\n',
    'cmd="srun python train.py --lr 3e-4 --data \\$SCRATCH/d"\neval "$cmd"\n',
    'run() { srun python "$@"; }\nrun train.py --lr 3e-4 --data "$SCRATCH/d"\n',
    # arrays, appended to; an exported command; a heredoc-written run script
    'ARGS=(--lr 3e-4)\nARGS+=(--data "$SCRATCH/d")\nsrun python train.py "${ARGS[@]}"\n',
    'export CMD="python train.py --lr 3e-4 --data $SCRATCH/d"\nsrun bash -c "$CMD"\n',
    'cat > run.sh <<EOF\npython train.py --lr 3e-4 --data \\$SCRATCH/d\nEOF\nsrun bash run.sh\n',
    "read -r -d '' CMD <<'EOF'\npython train.py --lr 3e-4 --data $SCRATCH/d\nEOF\nsrun bash -c \"$CMD\"\n",
])
def test_a_command_built_in_the_shell_is_read_as_bash_runs_it(body):
    intent = intent_of(body)
    assert (intent.entrypoint, intent.script_args) == ("train.py", ["--lr", "3e-4", "--data", "$SCRATCH/d"])
    assert (intent.launcher, intent.nodes, intent.gpus_per_node) == ("srun", 2, 4)


def test_counts_follow_arithmetic_and_the_allocation_the_directives_fix():
    intent = extract_script("#PBS -l select=2\nNNODES=`wc -l < $PBS_NODEFILE`\nlet PPN=2*2\n"
                            "NTOTAL=$(( NNODES * PPN ))\nmpiexec -n ${NTOTAL} --ppn ${PPN} python train.py\n")
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (2, 4, 8)


def test_a_size_left_to_submit_time_is_unknown_not_an_error():
    intent = extract_script("#!/bin/bash\n#SBATCH --gpus-per-node=4\n"
                            "srun torchrun --nnodes=$SLURM_NNODES --nproc_per_node=4 train.py\n")
    assert intent.nodes is None and intent.missing == []
    assert "the node count is chosen at submit time" in intent.notes[0]


def test_the_branch_bash_takes_is_read_when_the_test_is_decided():
    body = ("USE_FSDP=0\nif [ \"$USE_FSDP\" -eq 1 ]; then\n  EXTRA=\"--fsdp full_shard\"\nelse\n  EXTRA=\"--ddp\"\nfi\n"
            "srun python train.py $EXTRA\n")
    assert intent_of(body).script_args == ["--ddp"]
    undecided = body.replace("USE_FSDP=0\n", "")  # from the environment: every branch is read
    assert intent_of(undecided).script_args == ["--ddp"]


def test_what_only_the_job_knows_stays_as_written():
    intent = intent_of('export MASTER_ADDR=$(hostname)\nsrun python train.py --init "tcp://$MASTER_ADDR:3456" '
                       '--out "$SCRATCH/run-$SLURM_JOB_ID" --seed $1\n')
    assert intent.script_args == ["--init", "tcp://$MASTER_ADDR:3456", "--out", "$SCRATCH/run-$SLURM_JOB_ID",
                                  "--seed", "$1"]


def test_placeholders_are_notes_not_errors():
    intent = extract_script("#PBS -A <project_name>\n#PBS -q YOUR_QUEUE\n#PBS -l select=1\nmpiexec python t.py\n")
    assert (intent.account, intent.queue, intent.missing) == (None, None, [])
    assert any("'<project_name>' is a placeholder; give the real one with --account" in n for n in intent.notes)


# --- reads stay inside the checkout ------------------------------------------------------------

@pytest.fixture
def checkout(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "wrap.sh").write_text('export GITHUB_TOKEN=ghp_secret\ntorchrun --nproc_per_node=4 evil.py --x "$@"\n')
    (outside / ".bashrc").write_text("export HF_TOKEN=hf_secret\n")
    return repo, outside


@pytest.mark.parametrize("program", ["{outside}/wrap.sh", "../home/wrap.sh", "link.sh", "/proc/self/cwd/../home/wrap.sh"])
def test_a_wrapper_outside_the_checkout_is_never_read(checkout, program, monkeypatch):
    repo, outside = checkout
    (repo / "link.sh").symlink_to(outside / "wrap.sh")
    monkeypatch.chdir(repo)
    script = repo / "job.sbatch"
    script.write_text(f"#!/bin/bash\n#SBATCH -N 1\nsrun {program.format(outside=outside)} --lr 1\n")
    intent = extract(script.read_text(), str(script))
    assert "GITHUB_TOKEN" not in intent.env and intent.entrypoint != "evil.py"
    assert "ghp_secret" not in json.dumps(asdict(intent))


def test_a_sourced_file_outside_the_checkout_is_not_read_and_the_port_says_so(checkout):
    repo, outside = checkout
    script = repo / "job.sbatch"
    script.write_text(f"#!/bin/bash\n#SBATCH -N 1\nsource {outside}/.bashrc\nsrun python train.py\n")
    intent = extract(script.read_text(), str(script))
    assert "HF_TOKEN" not in intent.env
    assert any(f"`source {outside}/.bashrc` is not carried over" in note for note in intent.notes)


def test_a_wrapper_inside_the_checkout_is_followed(checkout):
    repo, _ = checkout
    (repo / "tools").mkdir()
    (repo / "tools" / "train.sh").write_text('export NCCL_DEBUG=INFO\ntorchrun --nproc_per_node=4 "$(dirname "$0")/train.py" "$@"\n')
    script = repo / "job.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH -N 1 --ntasks-per-node=1\nsrun bash tools/train.sh --lr 1\n")
    intent = extract(script.read_text(), str(script))
    assert (intent.entrypoint, intent.script_args, intent.env) == ("tools/train.py", ["--lr", "1"], {"NCCL_DEBUG": "INFO"})


def test_a_config_that_is_a_device_or_a_fifo_is_not_read(checkout):
    repo, _ = checkout
    os.mkfifo(repo / "ds.json")  # would block a reader forever
    (repo / "zero.json").symlink_to("/dev/zero")  # would exhaust memory
    for config in ("ds.json", "zero.json", "/dev/zero"):
        script = repo / "job.sbatch"
        script.write_text(f"#!/bin/bash\n#SBATCH -N 1\ndeepspeed --num_gpus 4 train.py --deepspeed_config {config}\n")
        started = time.monotonic()
        intent = extract(script.read_text(), str(script))
        assert time.monotonic() - started < 5 and intent.configs == {"deepspeed": config}
        assert intent.strategy is None  # unread: only the name could say, and it does not


def test_without_a_checkout_nothing_is_read(tmp_path):
    (tmp_path / "wrap.sh").write_text("torchrun --nproc_per_node=4 evil.py\n")
    intent = extract_script(f"#!/bin/bash\n#SBATCH -N 1\nsrun {tmp_path}/wrap.sh\n")  # text only, no folder
    assert intent.entrypoint == f"{tmp_path}/wrap.sh"


def test_the_checkout_of_a_script_is_its_git_repository(checkout):
    repo, _ = checkout
    (repo / "jobs").mkdir()
    (repo / "launch.sh").write_text("torchrun --nproc_per_node=4 train.py\n")
    script = repo / "jobs" / "job.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH -N 1\nsrun ./launch.sh\n")  # run from the repository's root
    assert extract(script.read_text(), str(script)).entrypoint == "train.py"
    assert Path(repo / "launch.sh").exists()


def test_what_a_port_does_not_carry_is_named_with_its_line():
    intent = extract_script("#!/bin/bash\n#SBATCH -N 2 --gpus-per-node=4 -o logs/%x-%j.out --array=0-3\n"
                            "#SBATCH --signal=USR1@90 --requeue\nset -x\n"
                            "trap 'scontrol requeue $SLURM_JOB_ID' USR1\necho start; date\n"
                            "cp -r $DATA $SLURM_TMPDIR/\npython prepare.py --n 1\nsrun python train.py\necho done\n")
    # the array is carried (intent.array, schedulers/arrays.py), so it is not among them
    assert "directives not carried over: --output=logs/%x-%j.out, --signal=USR1@90, --requeue" in intent.notes
    assert intent.array == "0-3"
    [commands] = [n for n in intent.notes if n.startswith("commands not carried over")]
    # another program the job runs has a note of its own (the job's programs one after another)
    assert any("`prepare.py --n 1` (line 8)" in n for n in intent.notes if "one after another" in n)
    for dropped in ("`trap 'scontrol requeue $SLURM_JOB_ID' USR1` (line 5)", "`cp -r $DATA $SLURM_TMPDIR/` (line 7)",
                    "logging lines (set, echo x2, date)"):
        assert dropped in commands
    assert "srun python train.py" not in commands  # the launch is what the port carries


@pytest.mark.parametrize("count, world", [("wc -l < $PBS_NODEFILE", 8), ("sort -u $PBS_NODEFILE | wc -l", 2)])
def test_a_pbs_node_file_lists_a_line_per_rank_slot(count, world):
    # Torque's nodes=2:ppn=4 (or select's mpiprocs=4) writes each host four times.
    intent = extract_script(f"#PBS -l nodes=2:ppn=4:gpus=4\nNP=$({count})\nmpirun -np $NP python train.py\n")
    assert (intent.nodes, intent.world_size) == (2, world)


# --- forms from the second round of real scripts (tests/data/real: sherlock, gadi, expanse, ...) --

@pytest.mark.parametrize("model, args", [
    ("vit_base", ["--bs", "256", "--lr", "5e-4"]),  # the arm whose pattern matches, not the last one
    ("vit_l14", ["--bs", "128", "--lr", "2e-4"]),  # a glob pattern, and `a|b` alternatives
    ("resnet", ["--bs", "64", "--lr", "0.1"]),  # the catch-all
])
def test_a_case_statement_takes_the_clause_whose_pattern_matches_the_word(model, args):
    body = (f"MODEL={model}\ncase \"$MODEL\" in\n  vit_small) BS=512; LR=1e-3 ;;\n  vit_base)\n    BS=256\n    LR=5e-4\n"
            "    ;;\n  vit_large|vit_l*) BS=128; LR=2e-4 ;;\n  *) BS=64; LR=0.1 ;;\nesac\nsrun python train.py --bs $BS --lr $LR\n")
    assert intent_of(body).script_args == args


def test_branches_the_script_cannot_decide_leave_a_count_computed_by_the_job_unknown():
    # The node count follows from a site variable; the `else` value is only a fallback. Read as a
    # Gadi script (PBS_NCI_NCPUS_PER_NODE), 96 CPUs on its 48-CPU nodes are 2 nodes of 4 ranks.
    intent = extract_script("#PBS -l ncpus=96 -l ngpus=8\nif [[ $PBS_NCPUS -ge $PBS_NCI_NCPUS_PER_NODE ]]; then\n"
                            "  NNODES=$((PBS_NCPUS / PBS_NCI_NCPUS_PER_NODE))\nelse\n  NNODES=1\nfi\n"
                            "MASTER_ADDR=$(head -n 1 $PBS_NODEFILE)\n"
                            "mpirun -np $NNODES --map-by ppr:1:node torchrun --nnodes=$NNODES --nproc_per_node=4 train.py\n")
    assert (intent.source_cluster, intent.nodes, intent.world_size) == ("gadi", 2, 8)
    # script constants in each branch: the default branch (else) stands, as before
    assert intent_of('if [ -n "$FAST" ]; then N=2; else N=4; fi\nsrun python t.py --n $N\n').script_args == ["--n", "4"]


def test_a_test_on_the_scripts_own_arguments_sees_them_empty():
    # DeepSpeed-Chat: `bash run.sh [OUTPUT] [ZERO_STAGE]`, read as run without arguments
    body = ('OUTPUT=$1\nZERO_STAGE=$2\nif [ "$OUTPUT" == "" ]; then\n  OUTPUT=./out\nfi\n'
            'if [ -z "$ZERO_STAGE" ]; then ZERO_STAGE=2; fi\nif [ $# -lt 1 ]; then MODE=default; fi\n'
            'srun python train.py --zero_stage $ZERO_STAGE --output_dir $OUTPUT --mode $MODE\n')
    assert intent_of(body).script_args == ["--zero_stage", "2", "--output_dir", "./out", "--mode", "default"]


@pytest.mark.parametrize("timing", ["time -p", "time", "/usr/bin/time -v -o t.log", "time -f '%e s'"])
def test_time_and_its_options_wrap_the_launch(timing):
    intent = intent_of(f"{timing} srun --mpi=pmi2 -n 8 python3 -u train.py --epochs 5\n")
    assert (intent.launcher, intent.entrypoint, intent.script_args, intent.world_size) == (
        "srun", "train.py", ["--epochs", "5"], 8)


def test_a_pbs_project_is_the_account_when_no_account_is_named():
    gadi = "#PBS -P ab12\n#PBS -q gpuvolta\n#PBS -l walltime=01:00:00\n"
    assert extract_script(gadi + "python3 train.py\n").account == "ab12"
    assert extract_script(gadi + "#PBS -A proj9\npython3 train.py\n").account == "proj9"  # -A names it
    assert extract_script("#PBS -A proj9\n#PBS -P ab12\npython3 train.py\n").account == "proj9"


def test_tensor_parallel_from_a_json_config_or_the_programs_own_api(checkout):
    repo, _ = checkout
    (repo / "cfg.json").write_text('{"distributed": {"tp_size": 2, "pp_size": 1, "dp_size": 4}}\n')
    (repo / "tp.py").write_text("from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module\n"
                                "model = parallelize_module(model, mesh, {'w1': ColwiseParallel()})\n")
    (repo / "plain.py").write_text("import torch\n")
    for program, strategy in (("plain.py --config cfg.json", "tp"), ("tp.py", "tp"), ("plain.py", "ddp")):
        script = repo / "job.sh"
        script.write_text(f"#!/bin/bash\ntorchrun --standalone --nproc_per_node=8 {program}\n")
        assert extract(script.read_text(), str(script)).strategy == strategy, program


def test_a_path_the_job_names_from_where_it_was_submitted_is_found_above_the_scripts_folder(checkout):
    # `sbatch recipes/launch.slurm` from a project folder that is not the git root
    repo, _ = checkout
    project = repo / "handbook"
    (project / "recipes" / "accelerate_configs").mkdir(parents=True)
    (project / "recipes" / "accelerate_configs" / "zero3.yaml").write_text(
        "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\nnum_machines: 1\nnum_processes: 8\n")
    script = project / "recipes" / "launch.slurm"
    script.write_text("#!/bin/bash\n#SBATCH -N 1\n"
                      "accelerate launch --config_file recipes/accelerate_configs/zero3.yaml scripts/run_sft.py\n")
    intent = extract(script.read_text(), str(script))
    assert (intent.strategy, intent.world_size) == ("zero3", 8)


def test_a_quoted_empty_array_or_argument_list_is_no_word_at_all():
    # "${multi_gpu[@]}" with an empty array passes nothing, as bash does; not an empty argument
    body = ("multi_gpu=()\nif [ \"$NNODES\" -gt 1 ]; then multi_gpu=(--multi_gpu); fi\n"
            "srun bash -c 'exec accelerate launch --machine_rank=\"$SLURM_NODEID\" \"$@\"' node \"${multi_gpu[@]}\" "
            "--num_machines=2 --num_processes=8 train.py --lr 1\n")
    intent = intent_of(body)
    assert (intent.entrypoint, intent.script_args, intent.world_size) == ("train.py", ["--lr", "1"], 8)
    # the job's own arguments are passed on as one "$@", never dropped (issue 16, cause 1)
    assert intent_of('srun python train.py "$@"\n').script_args == ['"$@"']


def test_module_command_loads_unloads_and_swaps_as_lmod_does():
    from maple_ci.extract.builtins import module_command

    modules: list = []
    module_command("module", ["load", "gcc", "cuda"], modules)
    module_command("ml", ["-gcc", "python"], modules)  # ml: a name loads, -name unloads
    module_command("ml", ["try-load", "nccl"], modules)  # a subcommand, not a module named try-load
    module_command("module", ["swap", "cuda", "cuda/12"], modules)
    module_command("ml", ["purge"], modules)  # neither loads nor unloads here
    assert modules == ["cuda/12", "python", "nccl"]
