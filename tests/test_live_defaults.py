"""A default for a variable the script never sets (`${EPOCHS:-100}`, issue 25 class 1, "right or loud"):
sbatch exports the submitting environment by default (sbatch(1) --export, default ALL; qsub -V), so
the job's bash decides the value (bash(1) "Shell Parameter Expansion"). The port keeps such a word
live instead of freezing the default. Oracles: the trace of source and port (real bash in the
sandbox), and real bash expanding the port's words under a submitter's environment."""

import subprocess
from pathlib import Path

from maple_ci.trace import trace_script
from maple_ci.trace.compare import first_rank

from checkout import ported_once

HEAD = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=4\n#SBATCH -t 00:20:00\n"
BODY = ("BASE=3e-4\n"
        "srun python fit.py --epochs ${EPOCHS:-100} --name run_${EXP:-x_${B:-256}} --lr ${LR:-$BASE}"
        " --n ${N:=4}\n")
SUBMITTER = {"EPOCHS": "7", "B": "64", "PATH": "/usr/bin:/bin"}


def _ported(tmp_path: Path, target: str) -> tuple:
    return ported_once(tmp_path, HEAD + BODY, target)


def _words_after_program(line: str, env: dict) -> list[str]:
    """What bash passes after `fit.py` on `line` (our own test script's words: printf runs, nothing else)."""
    rest = line.split("fit.py", 1)[1]
    out = subprocess.run(["bash", "-c", 'printf "%s\\n"' + rest], env=env, capture_output=True, text=True,
                         timeout=10, check=True).stdout
    return out.splitlines()


def test_defaults_for_variables_the_script_never_sets_stay_live(tmp_path):
    _, text = _ported(tmp_path, "perlmutter")
    launch = next(line for line in text.splitlines() if "fit.py" in line and not line.startswith("#"))
    for kept in ('"${EPOCHS:-100}"', '"run_${EXP:-x_${B:-256}}"', '"${LR:-3e-4}"', '"${N:=4}"'):
        assert kept in launch, launch


def test_the_port_passes_what_the_source_passes_under_a_submitters_environment(tmp_path):
    _, text = _ported(tmp_path, "polaris")
    launch = next(line for line in text.splitlines() if "fit.py" in line and not line.startswith("#"))
    source = _words_after_program(BODY.splitlines()[1], {**SUBMITTER, "BASE": "3e-4"})  # the script's own BASE
    assert source == ["--epochs", "7", "--name", "run_x_64", "--lr", "3e-4", "--n", "4"]
    assert _words_after_program(launch, SUBMITTER) == source
    assert _words_after_program(launch, {"PATH": "/usr/bin:/bin"})[:2] == ["--epochs", "100"]


def test_source_and_port_trace_the_same_program_words(tmp_path):
    path, text = _ported(tmp_path, "perlmutter")
    source = first_rank(trace_script(path, trusted=True))[-1].argv[1:]
    ported = first_rank(trace_script(path, cluster="perlmutter", nodes=1, text=text, trusted=True))[-1].argv[1:]
    assert source == ported and source[-8:] == ["--epochs", "100", "--name", "run_x_256", "--lr", "3e-4", "--n", "4"]


def test_the_scores_read_labels_and_ports_as_submitted_with_no_arguments_from_an_empty_environment():
    """Labels write a submitter's default either way (`configs/a.yaml` or `${1:-${CONFIG:-configs/a.yaml}}`);
    the score reads both as the script submitted bare, and only such defaults (not `${A:+x}`, not `$A`)."""
    from maple_ci.bench_real import _as_labelled  # submit.without_arguments, as the score uses it
    ported = ["--config", "${1:-${CONFIG:-configs/a.yaml}}", "--n", "${N:=4}", "$OUT", "${A:+x}", "${B:-$C/d}", "${B:-$(id)}"]
    assert _as_labelled(ported, "script_args") == ["--config", "configs/a.yaml", "--n", "4", "$OUT", "${A:+x}", "$C/d", "${B:-$(id)}"]
    assert _as_labelled(["--config", "configs/a.yaml"], "script_args") == ["--config", "configs/a.yaml"]


def test_a_count_defaulted_from_the_environment_is_its_default_for_the_size(tmp_path):
    """`export G=${G:-8}` then `--nproc_per_node=$G`: the port keeps G live, the size reads the default
    (the job's size is fixed at submit; a submitter's other G is what the header's size check meets)."""
    from maple_ci.extract import extract
    text = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH -t 00:20:00\nexport G=${G:-8}\nsrun torchrun --nnodes=2 --nproc_per_node=$G fit.py\n"
    intent = extract(text, "run.sh")
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (2, 8, 16)


def test_an_empty_environment_default_in_a_launcher_s_options_leaves_the_launch_readable():
    """`EXTRA=${EXTRA:-""}` spliced unquoted into srun's options: with nothing in the environment it is
    no word at all (bash), so the launch, its size and its program are read as without it."""
    from maple_ci.extract import extract_script

    text = ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --gres=gpu:4\nEXTRA=${EXTRA:-\"\"}\nARGS=${ARGS:-}\n"
            "srun --ntasks-per-node=4 ${EXTRA} python -u fit.py --out run ${ARGS}\n")
    intent = extract_script(text)
    assert (intent.launcher, intent.nodes, intent.world_size, intent.entrypoint) == ("srun", 2, 8, "fit.py")
    assert intent.script_args == ["--out", "run"]


def test_a_job_variable_s_default_is_the_scheduler_s_not_the_submitter_s():
    """`NGPU=${SLURM_GPUS_ON_NODE:-1}`: Slurm sets the variable in the job (sbatch(1) OUTPUT ENVIRONMENT),
    so a count read from it is the job's GPUs, not the default a shell outside a job would give."""
    from maple_ci.extract import extract_script
    from maple_ci.extract.submit import without_arguments

    text = ("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gres=gpu:2\nNGPU=${SLURM_GPUS_ON_NODE:-1}\n"
            "torchrun --standalone --nproc_per_node=${NGPU} fit.py\n")
    intent = extract_script(text)
    assert (intent.launcher, intent.world_size, intent.strategy) == ("torchrun", 2, "ddp")
    assert without_arguments("${SLURM_NNODES:-1}") == "${SLURM_NNODES:-1}"
    assert without_arguments("${EPOCHS:-${B:-3}}") == "3"
