"""Issue 25, classes 1, 2, 7 and 8: what a launch passes the program and what the program needs
around it, read by bash's rules rather than by case. Every script here is written in a style the
corpus (tests/data/real) does not hold: `$*` and `bash -lc` under PBS, ssh per node, Flux with the
program word on its own line, tab-indented continuations, set-up inside the launch's own string,
configs written by a program's output, Pyxis named containers, Ray clusters.
"""

import re
from pathlib import Path

import pytest

from maple_ci.extract import extract_script
from maple_ci.port import port_intent

SLURM = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n#SBATCH -t 01:00:00\n"
PBS = "#!/bin/bash\n#PBS -l select=2:ncpus=64:ngpus=4\n#PBS -l walltime=01:00:00\n"


def read(text: str, tmp_path: Path, files: dict = {}):
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    return extract_script(text, tmp_path, "job.sh", tmp_path)


def note(intent, pattern: str) -> str:
    found = [n for n in intent.notes if re.search(pattern, n)]
    assert found, intent.notes
    return found[0]


# -- class 1: the job's arguments reach the program through a string -----------------------------

@pytest.mark.parametrize("body, args", [
    # "$*" joined into a string, then the string run by a login shell under PBS's mpiexec
    ('ARGS="$*"\nmpiexec -n 8 --ppn 4 bash -lc "python3 train.py $ARGS"\n', ['"$@"']),
    # "${@}" in a scalar, then inside the srun string among other words
    ('args="${@}"\nsrun bash -c "source env.sh; exec python -u train.py ${args} --log-dir logs"\n',
     ['"$@"', "--log-dir", "logs"]),
    # "$@" written straight into a double-quoted string (the outer shell expands it)
    ('srun sh -c "python train.py --seed 1 $@"\n', ["--seed", "1", '"$@"']),
])
def test_the_jobs_arguments_inside_a_command_string_are_passed_on(body, args, tmp_path):
    intent = read(SLURM + body, tmp_path)
    assert (intent.entrypoint, intent.script_args) == ("train.py", args)
    note(intent, r"the program takes the job's own arguments")


def test_a_command_string_with_arguments_of_its_own_gets_those(tmp_path):
    """`bash -c '... "$@"' name a b`: bash gives the string a and b, not the job's arguments."""
    intent = read(SLURM + "srun bash -c 'python train.py \"$@\"' runner --fixed 3\n", tmp_path)
    assert intent.script_args == ["--fixed", "3"]


def test_the_jobs_arguments_in_an_ssh_command_per_node_are_passed_on(tmp_path):
    body = ('for host in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do\n'
            '  ssh "$host" "cd $PWD && torchrun --nnodes=2 --nproc_per_node=4 train.py $*" &\ndone\nwait\n')
    intent = read(SLURM + body, tmp_path)
    assert (intent.entrypoint, intent.script_args) == ("train.py", ['"$@"'])


@pytest.mark.parametrize("cluster", ["polaris", "perlmutter"])
def test_the_port_passes_the_jobs_arguments_on(cluster, tmp_path):
    intent = read(SLURM + 'args="${@}"\nsrun bash -c "python train.py ${args}"\n', tmp_path)
    [result] = port_intent(intent, [cluster], "job.sh", tmp_path / "out")
    assert result.status == "ok", result.checks
    assert re.search(r'python train\.py "\$@"$', result.script, re.M), result.script


# -- class 2: the program word on a continuation line of its own ----------------------------------

@pytest.mark.parametrize("body", [
    "flux run \\\n  -N 2 \\\n  -n 8 \\\n  python3 \\\n  train.py \\\n  --deepspeed_config ds.json \\\n  --zero 3\n",
    "mpiexec\\\n\t-n 8\\\n\t--ppn 4\\\n\t--cpu-bind depth -d 16\\\n\tpython3\\\n\ttrain.py\\\n\t--deepspeed_config ds.json\\\n\t--zero 3\n",
    "launch() {\n  mpiexec \\\n    -n 8 \\\n    --ppn 4 \\\n    python3 \\\n    \"$@\"\n}\n"
    "launch train.py \\\n  --deepspeed_config ds.json \\\n  --zero 3\n",
])
def test_arguments_on_continuation_lines_after_the_program_word(body, tmp_path):
    intent = read(PBS + body, tmp_path, {"ds.json": '{"zero_optimization": {"stage": 3}}'})
    assert intent.entrypoint == "train.py"
    assert intent.script_args == ["--deepspeed_config", "ds.json", "--zero", "3"]
    assert intent.configs == {"deepspeed": "ds.json"}


# -- class 7: set-up the program needs, named with its line ---------------------------------------

def test_set_up_inside_the_launch_string_is_named_with_its_line(tmp_path):
    body = 'srun bash -c "cd third_party/lib && pip install -e . && cd ../.. && python train.py --lr 1"\n'
    intent = read(SLURM + body, tmp_path)
    assert (intent.entrypoint, intent.script_args) == ("train.py", ["--lr", "1"])
    steps = note(intent, r"^the launch's command string also runs")
    assert "`cd third_party/lib` (line 6)" in steps and "`cd ../..` (line 6)" in steps
    assert "pip install" not in steps  # the install has its own note
    assert "`pip install -e .` (line 6)" in note(intent, r"^the source installs packages")


def test_an_install_before_the_launch_is_named_not_listed_as_logging(tmp_path):
    intent = read(SLURM + "python -m pip install --user -r requirements.txt\nsrun python train.py\n", tmp_path)
    assert "(line 6)" in note(intent, r"^the source installs packages")
    assert not any("logging lines (python" in n for n in intent.notes)


def test_a_config_the_job_writes_and_the_launch_reads_is_named(tmp_path):
    body = ("python tools/make_config.py --zero 3 > ds_generated.json\n"
            "srun python train.py --deepspeed_config ds_generated.json\n")
    intent = read(SLURM + body, tmp_path)
    assert "ds_generated.json (line 6)" in note(intent, r"^the job writes")
    assert not any("commands not carried over" in n and "make_config" in n for n in intent.notes)


def test_a_job_array_index_the_program_reads_is_named(tmp_path):
    """The array is carried (intent.array); the program's own read of the source's variable is not
    translated, so the note names it."""
    text = "#!/bin/bash\n#SBATCH --array=0-15\n#SBATCH --gres=gpu:1\npython sweep.py --grid grid.yaml\n"
    intent = read(text, tmp_path, {"sweep.py": "import os\ntrial = int(os.environ['SLURM_ARRAY_TASK_ID'])\n"})
    found = note(intent, r"array's index")
    assert "SLURM_ARRAY_TASK_ID in sweep.py" in found and "export it under this name" in found
    assert intent.array == "0-15" and not [n for n in intent.notes if "not carried" in n and "array" in n]


def test_a_pbs_array_index_in_the_arguments_is_carried(tmp_path):
    text = "#!/bin/bash\n#PBS -J 1-8\n#PBS -l select=1:ngpus=1\npython fold.py --fold $PBS_ARRAY_INDEX\n"
    intent = read(text, tmp_path)
    assert intent.array == "1-8" and not [n for n in intent.notes if "array" in n]


def test_an_array_index_without_an_array_directive_is_named(tmp_path):
    """Submitted as an array from the command line (sbatch --array=0-3 job.sh): the port is one job."""
    text = "#!/bin/bash\n#SBATCH --gres=gpu:1\npython fold.py --fold $SLURM_ARRAY_TASK_ID\n"
    intent = read(text, tmp_path)
    assert intent.array is None and "submit it as an array" in note(intent, r"array's index")


def test_a_pyxis_named_container_keeps_the_image_that_made_it(tmp_path):
    body = ("srun --ntasks-per-node=1 --container-image=nvcr.io#nvidia/pytorch:24.05-py3 --container-name=env "
            "pip install -r requirements.txt\n"
            "srun --container-name=env --container-mounts=$PWD:/ws python train.py\n")
    intent = read(SLURM + body, tmp_path)
    assert intent.container.runtime == "pyxis" and intent.container.image == "nvcr.io#nvidia/pytorch:24.05-py3"
    note(intent, r"--container-name=env")
    note(intent, r"^the source installs packages")


def test_the_launchers_core_binding_is_named(tmp_path):
    body = "export OMP_NUM_THREADS=16\nexport OMP_PROC_BIND=close\nsrun --cpu-bind=cores --distribution=block:cyclic python train.py\n"
    intent = read(SLURM + body, tmp_path)
    assert "--cpu-bind=cores --distribution=block:cyclic (line 8)" in note(intent, r"binds its ranks")
    assert intent.env["OMP_NUM_THREADS"] == "16" and intent.env["OMP_PROC_BIND"] == "close"


def test_a_ray_cluster_start_is_set_up_and_the_driver_is_the_program(tmp_path):
    body = ('head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)\n'
            'srun -N1 -n1 -w "$head" ray start --head --port=6379 --block &\nsleep 20\n'
            'python tune_driver.py --samples 8\n')
    intent = read(SLURM + body, tmp_path, {"tune_driver.py": "import ray\nray.init(address='auto')\n"})
    assert (intent.entrypoint, intent.framework) == ("tune_driver.py", "ray")
    assert "ray start --head" in note(intent, r"^the job starts the runtime its program joins")


# -- class 8: the program itself at a site path ---------------------------------------------------

@pytest.mark.parametrize("program", ["/leonardo_work/IscrC_x/repo/train.py", "/scratch/proj123/code/train.py",
                                     "/home/$USER/llm/train.py"])
def test_a_program_at_a_site_path_is_named_in_the_header(program, tmp_path):
    intent = read(SLURM + f"srun python {program} --epochs 1\n", tmp_path)
    [result] = port_intent(intent, ["polaris"], "job.sh", tmp_path / "out")
    assert re.search(rf"^# Note: the program itself is at a path on the source site's file systems, kept as written: "
                     rf"{re.escape(program)}; give its path on polaris", result.script, re.M), result.script


def test_a_program_in_the_checkout_gets_no_site_path_note(tmp_path):
    intent = read(SLURM + "srun python src/train.py --data /tmp/d\n", tmp_path)
    [result] = port_intent(intent, ["polaris"], "job.sh", tmp_path / "out")
    assert "the program itself is at a path" not in result.script


def test_the_array_s_own_id_reaches_a_pbs_port_as_pbs_names_it(tmp_path):
    """PBS Pro's PBS_ARRAY_ID is the whole array's id, as Slurm's SLURM_ARRAY_JOB_ID (both schedulers'
    docs): a run folder named after it keeps one folder per array on either."""
    from maple_ci.schedulers.jobvars import translate

    assert translate("runs/${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}", "pbs", 4, "0-3") == \
        "runs/${PBS_ARRAY_ID}_${PBS_ARRAY_INDEX}"
    assert translate("runs/$PBS_ARRAY_ID", "slurm", 4, "0-3") == "runs/$SLURM_ARRAY_JOB_ID"
