"""Issue 25, class 7: set-up the program needs, run by a shell that reads its commands from its
standard input (bash(1): "If no arguments remain after option processing, or -s is given, commands
are read from the standard input"), is named in the port's header with its line, never dropped
silently; and a script that is only a submit line (no shebang, no directives: `sbatch --wrap=...`,
`qsub job.pbs`) is read as the script it is, not as a request in words. Each script is one of this
file's own, in styles the corpus does not hold (a per-node srun step fed a here-document, `cat <<EOF |
bash`, `bash -s < file`, conda and venv creation, sbatch --wrap with continued lines).
"""

import re
from pathlib import Path

import pytest

from maple_ci.extract import extract
from maple_ci.port import port_intent
from maple_ci.trace.compare import gate

SLURM = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:4\n#SBATCH -t 00:40:00\n"


def read(tmp_path: Path, text: str, files: dict = {}):
    (tmp_path / ".git").mkdir(exist_ok=True)
    for name, body in {"train.py": "import torch\n", **files}.items():
        (tmp_path / name).write_text(body)
    (tmp_path / "job.sh").write_text(text)
    return extract(text, str(tmp_path / "job.sh"), base_dir=tmp_path, root=tmp_path)


def note(intent, pattern: str) -> str:
    found = [n for n in intent.notes if re.search(pattern, n)]
    assert found, intent.notes
    return found[0]


def test_a_per_node_step_fed_a_here_document_names_its_environment_and_installs(tmp_path):
    body = ("srun --ntasks-per-node=1 bash <<'SETUP'\n"
            "conda env create -p $TMPDIR/venv -f environment.yml\n"
            "cd $HOME/data && tar xf shards.tar\n"
            "python -m pip install -e .\n"
            "SETUP\n"
            "srun torchrun --nproc_per_node=4 train.py --epochs 3\n")
    intent = read(tmp_path, SLURM + body)
    assert (intent.entrypoint, intent.script_args) == ("train.py", ["--epochs", "3"])
    assert "`conda env create -p $TMPDIR/venv -f environment.yml` (line 6)" in note(intent, "creates the Python environment")
    assert "`python -m pip install -e .` (line 6)" in note(intent, "installs packages")
    # the other step is not the launch's own string: said so, with the shell's line
    other = note(intent, "other shells run")
    assert "`tar xf shards.tar` (in the shell of line 6)" in other and "launch's command string" not in other


def test_a_here_document_piped_into_sh_is_read_as_its_script(tmp_path):
    body = ("cat <<EOF | sh -s -- --fast\nvirtualenv /tmp/env-$SLURM_JOB_ID\nEOF\n"
            "srun python train.py\n")
    intent = read(tmp_path, SLURM + body)
    assert "`virtualenv /tmp/env-$SLURM_JOB_ID`" in note(intent, "creates the Python environment")


def test_bash_reading_a_checkout_file_on_its_input_runs_that_file(tmp_path):
    intent = read(tmp_path, SLURM + "bash -l < prepare.sh\nsrun python train.py\n",
                  {"prepare.sh": "export HF_HOME=/tmp/hf\nuv pip install -r requirements.txt\n"})
    assert "`uv pip install -r requirements.txt` (line 6)" in note(intent, "installs packages")


def test_an_environment_made_at_the_top_is_named_with_its_line_not_as_a_logging_line(tmp_path):
    intent = read(tmp_path, SLURM + "python3 -m venv .venv\nsource .venv/bin/activate\nsrun python train.py\n")
    assert "`python3 -m venv .venv` (line 6)" in note(intent, "creates the Python environment")
    assert not any("logging lines (python" in n for n in intent.notes), intent.notes


def test_a_shell_given_a_script_operand_does_not_read_its_input(tmp_path):
    """`bash run.sh < answers.txt`: run.sh is the script; the redirected file is only its input."""
    intent = read(tmp_path, SLURM + "srun bash run.sh < answers.txt\n",
                  {"run.sh": "python train.py --from-file\n", "answers.txt": "virtualenv /tmp/x\n"})
    assert (intent.entrypoint, intent.script_args) == ("train.py", ["--from-file"])
    assert not any("creates the Python environment" in n for n in intent.notes)


# -- a script that is only a submit line ---------------------------------------------------------

def test_a_wrap_submit_line_is_the_script_its_string_is(tmp_path):
    """sbatch(1) --wrap: the string is wrapped in an sh script and submitted; the line's options are its directives."""
    text = ("sbatch --nodes 2 --ntasks-per-node=4 \\\n   --gpus-per-node=4\\\n   --time=90 -A proj42 \\\n"
            "   --wrap='module load cuda; srun python3 train.py --data \"$HOME/d s\"'\n")
    intent = read(tmp_path, text)
    assert (intent.scheduler, intent.nodes, intent.gpus_per_node, intent.world_size) == ("slurm", 2, 4, 8)
    assert (intent.entrypoint, intent.script_args) == ("train.py", ["--data", "$HOME/d s"])
    assert (intent.walltime, intent.account) == ("01:30:00", "proj42")
    assert not any("--wrap" in n for n in intent.notes if n.startswith("directives not carried"))


def test_a_submit_line_naming_a_checkout_script_is_read_as_that_script(tmp_path):
    intent = read(tmp_path, "qsub -l select=3:ngpus=4 -l walltime=02:00:00 run.pbs\n",
                  {"run.pbs": "#!/bin/bash\ncd $PBS_O_WORKDIR\nmpiexec -n 12 --ppn 4 python train.py\n"})
    assert (intent.scheduler, intent.nodes, intent.entrypoint, intent.walltime) == ("pbs", 3, "train.py", "02:00:00")


@pytest.mark.parametrize("request_text", ["train ViT with torchrun on 8 GPUs across two nodes",
                                          "submit a job with sbatch on 4 nodes for 2 hours"])
def test_a_request_in_words_stays_a_request(request_text):
    assert extract(request_text).entrypoint in (None, "train.py")


# -- the gate: named set-up is not a silent difference ---------------------------------------------

def test_the_gate_passes_a_port_whose_header_names_the_input_shells_set_up(tmp_path):
    body = ("srun --ntasks-per-node=1 bash <<EOF\nvirtualenv --no-download \\$SLURM_TMPDIR/env\n"
            "pip install --no-index numpy\nEOF\nsrun python train.py\n")
    read(tmp_path, SLURM + body)
    path = tmp_path / "job.sh"
    intent = extract(path.read_text(), str(path), base_dir=tmp_path, root=tmp_path)
    [result] = port_intent(intent, ["perlmutter"], "job.sh", tmp_path / "out", source_text=path.read_text())
    [checked] = gate(path, [result], trusted=True)
    assert [c.ok for c in checked.checks if c.name == "trace"] == [True], [c.message for c in checked.checks]
    header = checked.script.split("#SBATCH", 1)[0]
    assert "virtualenv --no-download" in header and "pip install --no-index numpy" in header


def test_the_trace_runs_a_wrap_submit_lines_string_as_the_job(tmp_path):
    """The trace's sbatch stand-in runs --wrap's string under sh, as sbatch(1) submits it."""
    from maple_ci.trace import trace_script

    read(tmp_path, "sbatch -N 1 --gres=gpu:2 --wrap 'cd sub && python3 ../train.py --seed 7'\n")
    (tmp_path / "sub").mkdir()
    trace = trace_script(tmp_path / "job.sh", trusted=True)
    assert [(r.program, r.cwd.rsplit("/", 1)[-1]) for r in trace.ranks] == [
        (["../train.py", "--seed", "7"], "sub")]


def test_a_submit_line_naming_its_job_by_the_site_s_absolute_path_reads_the_checkout_s_copy(tmp_path):
    """The repository was checked out at /srv/u/repo on the site; the submit line names its job file there."""
    (tmp_path / "sweeps" / "a").mkdir(parents=True)
    (tmp_path / "sweeps" / "a" / "job.sh").write_text("#!/bin/bash\nsrun python3 ../../train.py --lr 3\n")
    intent = read(tmp_path, "sbatch -N 1 --gres=gpu:4 -t 30 /srv/u/repo/sweeps/a/job.sh\n")
    assert (intent.entrypoint, intent.script_args, intent.walltime) == ("../../train.py", ["--lr", "3"], "00:30:00")
    assert "read as sweeps/a/job.sh" in note(intent, "outside the checkout")


@pytest.mark.parametrize("launch, strategy", [('mpiexec -n 8 --ppn 4 "$@"', None), ("srun -N 2 $@", None),
                                              ('srun --ntasks-per-node=1 "${@:1}"', None),
                                              ('python3 -u "${@:1}"', "single")])  # python runs one process
def test_a_launch_whose_program_is_the_job_s_arguments_is_refused_naming_them(launch, strategy, tmp_path):
    intent = read(tmp_path, SLURM.replace("--nodes=2", "--nodes=1") + launch + "\n")
    assert (intent.entrypoint, intent.script_args, intent.strategy) == (None, [], strategy)
    assert "it is the job's arguments" in note(intent, "the program is not in the script")
    assert not any("the program takes the job's own arguments" in n for n in intent.notes), intent.notes


# -- the framework a program's own module builds -------------------------------------------------

@pytest.mark.parametrize("module, framework", [
    ("import lightning as L\ndef build():\n    return L.Trainer(devices=4)\n", "lightning"),
    ("import torch\ndef build():\n    return torch.nn.Linear(2, 2)\n", "pytorch"),
])
def test_a_program_whose_own_module_builds_the_trainer_is_read_through_that_module(module, framework, tmp_path):
    (tmp_path / "src" / "kit").mkdir(parents=True)
    (tmp_path / "src" / "kit" / "fit.py").write_text(module)
    intent = read(tmp_path, SLURM + "srun torchrun --nproc_per_node=4 src/main.py\n",
                  {"src/main.py": "import os, torch\nfrom kit.fit import build\nbuild()\n"})
    assert intent.framework == framework


# -- the folder the program runs in ---------------------------------------------------------------

def test_a_cd_inside_a_function_the_script_calls_is_named_with_its_line(tmp_path):
    text = SLURM + "go() {\n  cd experiments/$1\n  srun python ../../train.py\n}\ngo small\ngo large\n"
    shown = note(read(tmp_path, text), "commands not carried over")
    assert shown.count("`cd experiments/$1` (line 7)") == 1, shown


@pytest.mark.parametrize("set_up, program, header, kind", [
    # a cd the port does not make: the program's relative paths name other files
    ("cd exp\n", "../train.py", "commands not carried over: `cd exp` (line 6)", "cwd"),
    # an environment the port does not make
    ("virtualenv --system-site-packages venv\n", "train.py",
     "the source creates ... (`virtualenv --system-site-packages venv`)", "setup"),
])
def test_the_gate_fails_a_port_that_drops_set_up_unless_its_header_names_it(set_up, program, header, kind, tmp_path):
    from maple_ci.trace import trace_script
    from maple_ci.trace.compare import compare, header_of

    (tmp_path / "exp").mkdir()
    read(tmp_path, SLURM + set_up + f"srun python {program}\n")
    path = tmp_path / "job.sh"
    port = "#!/bin/bash\n# Note: {}\n#SBATCH -N 2\nsrun python " + program + "\n"
    silent, named = port.format("nothing"), port.format(header)
    source = trace_script(path, trusted=True)
    assert [d.kind for d in compare(source, trace_script(path, trusted=True, text=silent), header_of(silent))] == [kind]
    assert compare(source, trace_script(path, trusted=True, text=named), header_of(named)) == []


def test_what_a_set_up_shell_exports_or_activates_stays_in_that_shell(tmp_path):
    """bash reading a here-document is a child process: its exports and activation do not reach the job's later srun."""
    body = ("srun --ntasks-per-node=1 bash <<'EOF'\nexport PIP_INDEX_URL=http://mirror\nmodule load gcc\n"
            "source /tmp/env/bin/activate\npip install -e .\nEOF\nexport OMP_NUM_THREADS=2\nsrun python train.py\n")
    intent = read(tmp_path, SLURM + body)
    assert (intent.env, intent.modules, intent.python_env) == ({"OMP_NUM_THREADS": "2"}, [], None)
    note(intent, "installs packages")


def test_a_bsub_line_whose_job_is_a_command_is_read_as_that_command(tmp_path):
    """bsub(1): `bsub [options] command [arguments]`: the command is the job; the options its directives."""
    intent = read(tmp_path, 'mkdir -p logs\nbsub -n 8 -q gpu_a100 -P proj7 -gpu "num=4" -W 2:00 python train.py --bf16\n')
    assert (intent.scheduler, intent.entrypoint, intent.script_args) == ("lsf", "train.py", ["--bf16"])
    assert (intent.queue, intent.account, intent.gpus_per_node, intent.walltime) == ("gpu_a100", "proj7", 4, "02:00:00")


def test_a_job_script_run_by_the_site_s_absolute_path_is_read_from_the_checkout(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "go.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node=4 train.py --deep\n")
    intent = read(tmp_path, SLURM + "srun bash /scratch/me/proj/runs/go.sh\n")
    assert (intent.launcher, intent.entrypoint, intent.script_args) == ("torchrun", "train.py", ["--deep"])
    assert "read as runs/go.sh" in note(intent, "is outside the checkout")
