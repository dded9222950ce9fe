"""The program and every argument are read exactly as the source passes them (issue 16, cause 1):
the job's own arguments passed through, continuation lines, arguments built by functions, arrays
and eval. bash itself is the reference: each script is also run by bash with `srun` standing in
as a function that prints what it was given, and the extraction must match it word for word."""

import subprocess

import pytest

from maple_ci.extract import extract, extract_script, program_line
from maple_ci.port import apply_overrides, port_intent
from maple_ci.schedulers.jobvars import translate

HEADER = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n#SBATCH -t 01:00:00\n"

BUILT = {
    "function that echoes": 'opts() { local lr=$1; echo "--lr ${lr} --warmup 500"; }\nOPTS=$(opts 3e-4)\n'
                            "srun python train.py ${OPTS} --epochs 10\n",
    "function that launches": 'run() { srun python train.py "$@"; }\nrun --lr 3e-4 --data "$HOME/d"\n',
    "function with $*": "run() { srun python train.py $*; }\nrun --lr 3e-4 --epochs 2\n",
    "array appended to": 'A=(--model vit --epochs 3)\nA+=(--amp --out "dir with space")\nsrun python train.py "${A[@]}"\n',
    "eval of built strings": 'L="srun python"\nC="train.py --cfg c.yaml --seed 1"\neval "${L} ${C}"\n',
    "continuation lines": "srun \\\n  python3 \\\n  train.py \\\n  --deepspeed_config ds_config.json \\\n  --zero 2\n",
    "set -- then pass-through": 'set -- --lr 1e-3 "--name=a b"\nsrun python train.py "$@" --epochs 1\n',
    "pattern removal": 'CKPT=/ckpt/run_7/model.pt\nsrun python train.py --run ${CKPT%/*} --file ${CKPT##*/}\n',
    "arithmetic": "MBS=2\nGBS=$((MBS * 8 * 4 / 2))\nsrun python train.py --global-batch-size $GBS\n",
}


def _bash_argv(body: str) -> list[str]:
    """What bash passes to the program: srun replaced by a function that prints its words."""
    stub = "srun() { shift; printf '%s\\n' \"$@\"; }\n"  # drop `python`, print the program and its args
    out = subprocess.run(["bash", "-c", stub + body], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "HOME": "/home/u"})
    return out.stdout.splitlines()


@pytest.mark.parametrize("form", BUILT, ids=list(BUILT))
def test_arguments_reach_the_program_as_bash_passes_them(form):
    intent = extract_script(HEADER + BUILT[form])
    argv = _bash_argv(BUILT[form])
    assert [intent.entrypoint, *intent.script_args] == [argv[0], *[a.replace("/home/u", "$HOME") for a in argv[1:]]]


@pytest.mark.parametrize("line", [
    'srun python train.py "$@"', "srun python train.py ${@}", "srun python train.py $*",
    'srun python train.py "$*"', 'args="${@}"\nsrun python train.py ${args}',
])
def test_the_job_s_own_arguments_are_passed_through_not_dropped(line):
    """`sbatch job.sh --config=mp`: before, the arguments were read as none and silently lost."""
    intent = extract_script(HEADER + line + "\n")
    assert intent.script_args == ['"$@"']
    assert any('"$@"' in note and "submit" in note for note in intent.notes)


def test_pass_through_with_fixed_arguments_keeps_their_order():
    intent = extract_script(HEADER + 'srun python train.py --epochs 3 "$@" --seed 1\n')
    assert intent.script_args == ["--epochs", "3", '"$@"', "--seed", "1"]


def test_a_test_on_the_job_s_arguments_sees_none_as_bash_does_without_them():
    intent = extract_script(HEADER + 'if [ -z "$*" ]; then A=--default; else A=--given; fi\nsrun python train.py $A\n')
    assert intent.script_args == ["--default"]


def test_the_port_passes_the_job_s_arguments_on_and_reads_back_the_same(tmp_path):
    intent = extract_script(HEADER + "#SBATCH -A m1234\nsrun python train.py --lr 1 \"$@\"\n")
    result = port_intent(intent, ["perlmutter"], "job.sbatch", tmp_path)[0]
    assert result.status == "ok", result.reason
    assert 'train.py --lr 1 "$@"' in result.script  # unquoted: the port's own submit arguments
    assert extract_script(result.script).script_args == ["--lr", "1", '"$@"']


def test_a_placeholder_node_count_asks_for_nodes_and_ports_with_them(tmp_path):
    """`#SBATCH --nodes=<num_nodes>` was fatal even with --nodes 2 given."""
    intent = extract_script("#!/bin/bash\n#SBATCH --nodes=<num_nodes>\n#SBATCH --gpus-per-node=4\n"
                            "srun python train.py\n")
    assert intent.nodes is None
    assert any("placeholder" in note and "--nodes" in note for note in intent.notes)
    result = port_intent(apply_overrides(intent, nodes=2, account="m1234"), ["perlmutter"], "job.sbatch", tmp_path)[0]
    assert result.status == "ok" and extract_script(result.script).nodes == 2
    with pytest.raises(Exception, match="--nodes expects a number"):
        extract_script("#!/bin/bash\n#SBATCH --nodes=lots\nsrun python train.py\n")


@pytest.mark.parametrize("entrypoint, program_args, expected", [
    ("train.py --config x", None, ("train.py", ["--config", "x"])),
    ("python3 train.py --config 'a b.yaml'", None, ("train.py", ["--config", "a b.yaml"])),
    ("-m pkg.train --lr 1", None, ("-m pkg.train", ["--lr", "1"])),
    ("train.py", "--x 1 --y '2 3'", ("train.py", ["--x", "1", "--y", "2 3"])),
    ("train.py", None, ("train.py", None)),  # the script's arguments stay
    (None, "--x 1", (None, ["--x", "1"])),
])
def test_entrypoint_takes_a_command_line(entrypoint, program_args, expected):
    """`--entrypoint 'train.py --config x'` was one word: a program that does not exist."""
    assert program_line(entrypoint, program_args) == expected


def test_maple_port_runs_the_entrypoint_command_line_given(tmp_path):
    source = tmp_path / "job.sbatch"
    source.write_text(HEADER + "srun ./run_something\n")
    result = subprocess.run(["maple", "port", str(source), "--to", "perlmutter", "--account", "m1234", "--out",
                             str(tmp_path / "out"), "--entrypoint", "train.py --config 'a b.yaml'", "--program-args",
                             "--lr 1"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    port = extract_script((tmp_path / "out" / "perlmutter" / "job.sbatch").read_text())
    assert (port.entrypoint, port.script_args) == ("train.py", ["--config", "a b.yaml", "--lr", "1"])
    bad = subprocess.run(["maple", "port", str(source), "--to", "perlmutter", "--entrypoint", "train.py 'open"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--entrypoint" in bad.stderr


@pytest.mark.parametrize("source, target, expected", [
    ('"${SLURM_SUBMIT_DIR}/multinode.py"', "pbs", '"${PBS_O_WORKDIR}/multinode.py"'),
    ("$SCRATCH/runs/$SLURM_JOB_ID", "pbs", "$SCRATCH/runs/$PBS_JOBID"),
    ("--nodes=$SLURM_NNODES", "pbs", "--nodes=$NNODES"),
    ("--world=$SLURM_NTASKS", "pbs", "--world=$((NNODES * 4))"),
    ("--ranks-per-node=${SLURM_NTASKS_PER_NODE}", "pbs", "--ranks-per-node=4"),
    ("$((2*PBS_JOBSIZE*4/1/1))", "slurm", "$((2*NNODES*4/1/1))"),
    ("$PBS_O_WORKDIR/cfg.yaml", "slurm", "$SLURM_SUBMIT_DIR/cfg.yaml"),
    ("$SLURM_NNODES", "slurm", "$SLURM_NNODES"),  # the target's own: kept
    ("$((2*PBS_JOBSIZE*4))", "pbs", "$((2*NNODES*4))"),  # ALCF's ezpz sets it, PBS does not
])
def test_the_source_scheduler_s_job_variables_become_the_target_s(source, target, expected):
    assert translate(source, target, 4) == expected


def test_a_job_variable_without_an_equivalent_stops_the_port(tmp_path):
    intent = extract_script(HEADER + "#SBATCH -A m1234\nsrun python train.py --hosts $SLURM_JOB_NODELIST\n")
    with pytest.raises(Exception, match="SLURM_JOB_NODELIST"):
        port_intent(intent, ["polaris"], "job.sbatch", tmp_path)


def test_a_port_to_pbs_runs_the_program_from_the_submit_directory_and_computes_sizes_at_run_time(tmp_path):
    """Cause 6: "${SLURM_SUBMIT_DIR}/multinode.py" on a PBS machine ran /multinode.py; cause 2:
    BS=$((MBS*PBS_JOBSIZE*PPN/PP/TP)) was carried as literal text into --global-batch-size."""
    intent = extract_script(HEADER + "#SBATCH -A m1234\n"
                            'srun python "${SLURM_SUBMIT_DIR}/multinode.py" --nodes $SLURM_NNODES\n')
    result = port_intent(intent, ["polaris"], "job.sbatch", tmp_path)[0]
    assert result.status == "ok", [c.message for c in result.checks if not c.ok]
    assert 'python "${PBS_O_WORKDIR}/multinode.py" --nodes "$NNODES"' in result.script
    source = ("#!/bin/bash\n#PBS -l select=2\n#PBS -l walltime=01:00:00\n#PBS -A proj\nMBS=2\nPPN=4\nPP=1\nTP=1\n"
              "BS=$((MBS*PBS_JOBSIZE*PPN/PP/TP))\nmpiexec -n 8 --ppn 4 python3 train.py --global-batch-size $BS\n")
    result = port_intent(extract_script(source), ["perlmutter"], "job.pbs", tmp_path)[0]
    assert '--global-batch-size "$((2*NNODES*4/1/1))"' in result.script
    nnodes = 3  # what bash makes of it at run time, for an allocation of 3 nodes
    # the launch line, not the header's record (which names the arguments too)
    line = next(l for l in result.script.splitlines() if "--global-batch-size" in l and not l.startswith("#"))
    word = line.split("--global-batch-size ", 1)[1].split()[0]
    out = subprocess.run(["bash", "-c", f"NNODES={nnodes}; echo {word}"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(2 * nnodes * 4)


def test_part_of_the_job_s_arguments_is_kept_as_written_not_dropped():
    assert extract_script(HEADER + 'srun python train.py "${@:2}"\n').script_args == ["${@:2}"]
    assert extract_script(HEADER + 'f() { srun python train.py "${@:2}"; }\nf a b c\n').script_args == ["b", "c"]


def test_the_submit_line_shows_the_job_s_arguments_where_the_scheduler_passes_them(tmp_path):
    intent = extract_script(HEADER + "#SBATCH -A m1234\nsrun python train.py \"$@\"\n")
    slurm, pbs = port_intent(intent, ["perlmutter", "polaris"], "job.sbatch", tmp_path)
    submit = next(line for line in slurm.script.splitlines() if line.startswith("# Submit:"))
    assert "job.sbatch ARGS..." in submit and "the program's own arguments" in submit
    assert "ARGS" not in next(line for line in pbs.script.splitlines() if line.startswith("# Submit:"))
    assert any("PBS passes none" in line for line in pbs.script.splitlines() if line.startswith("# Note:"))


@pytest.mark.parametrize("text, nodes", [
    ("Need train_vit.py (ViT) running on a couple of nodes? no — four nodes, 4 GPUs/node, torchrun please", 4),
    ("run train.py with torchrun on 2 nodes, actually make it 3 nodes", 3),
    ("run train.py with torchrun on 2 nodes and 4 gpus per node", 2),
])
def test_a_request_that_corrects_itself_means_the_value_said_last(text, nodes):
    assert extract(text).nodes == nodes


def test_a_script_named_relative_to_the_working_directory_reads_its_program(tmp_path, monkeypatch):
    """`maple extract job.sh` from the script's own folder, below the checkout's root, reads the
    program's file as from anywhere else (its imports say TensorFlow)."""
    from pathlib import Path

    from maple_ci.extract import extract

    (tmp_path / ".git").mkdir()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "job.sh").write_text("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=4\nsrun python train.py\n")
    (tmp_path / "sub" / "train.py").write_text("import tensorflow as tf\nstrategy = tf.distribute.MirroredStrategy()\n")
    monkeypatch.chdir(tmp_path / "sub")
    intent = extract(Path("job.sh").read_text(), "job.sh")
    assert (intent.framework, intent.strategy) == ("tensorflow", "mirrored")
