"""Which command of a job is its program (issue 25 C, program/entrypoint fields), each class from
bash's manual or the tool's own contract; scripts written for these tests in styles the corpus does
not hold.

- several programs: a data step, then the training, both run alone: the training is the program;
- a launch built from an array indexed by a loop's counter (`${hosts[$k]}`): one unknown word (bash
  expands it to one host), never none, so the container command after `srun -w` stays the container;
- nested arithmetic (`$(( $((n*4)) - 1 ))`, "Arithmetic Expansion": expressions nest) is one word;
- `$(command -v /opt/py/bin/python3.9) fit.py`: command -v prints the path it is given when the file is
  executable ("Bash Builtins"), so python runs fit.py;
- a console script the checkout declares in pyproject.toml [project.scripts] or setup.cfg, or one
  named for a framework (`xy-vllm`), run alone through `stdbuf`, is the program, not "no entrypoint";
- containers: enroot start's own grammar; `ray job submit -- CMD` runs CMD; `srun "$@" sh -c '...'`;
  a job script written into a folder and submitted after `cd` there; an engine and then its client;
  python reading its program from its input is refused saying so; the trace's program where static
  reading finds none.
"""

from maple_ci.extract import extract_script

SLURM = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gpus-per-node=2\n"


def test_the_training_step_after_a_data_step_run_alone_is_the_program():
    script = SLURM + ("python3 -m corpus.tools.shard_parquet --src raw/ --dst shards/\n"
                      "python3 -m corpus.engine.trainer --shards shards/ --epochs 3\n"
                      "python3 -m corpus.tools.report --run last\n")
    intent = extract_script(script)
    assert (intent.entrypoint, intent.script_args) == ("-m corpus.engine.trainer", ["--shards", "shards/", "--epochs", "3"])


def test_of_two_steps_neither_named_for_training_the_first_is_the_program():
    intent = extract_script(SLURM + "python stage_a.py --x 1\npython stage_b.py --y 2\n")
    assert intent.entrypoint == "stage_a.py"


def test_a_step_that_fetches_data_or_evaluates_is_not_the_program():
    script = SLURM + "python fetch_corpus.py --to data/\npython main.py --data data/\npython evaluate.py --ckpt last\n"
    assert extract_script(script).entrypoint == "main.py"


def test_a_host_from_an_array_indexed_by_the_loop_keeps_the_container_command():
    script = ("#!/bin/bash\n#SBATCH -N 3\nhosts=( $(scontrol show hostnames \"$SLURM_JOB_NODELIST\") )\n"
              "RUN=\"singularity exec --nv --bind /data:/data img.sif\"\n"
              "for k in $(seq 0 $((SLURM_NNODES - 1))); do\n"
              "  srun -N1 -n1 -w ${hosts[$k]} $RUN torchrun --nnodes=3 --nproc_per_node=2 --node_rank=$k fit.py --bs 8 &\n"
              "done\nwait\n")
    intent = extract_script(script)
    assert (intent.launcher, intent.entrypoint, intent.script_args) == ("torchrun", "fit.py", ["--bs", "8"])
    assert intent.container and intent.container.image == "img.sif"


def test_nested_arithmetic_is_one_word_in_a_command_string():
    script = SLURM + ("srun bash -c 'accelerate launch --num_machines 1 --num_processes $(( $((SLURM_NNODES*2)) - 1 )) "
                      "grpo.py --beta 0.1'\n")
    intent = extract_script(script)
    assert (intent.entrypoint, intent.script_args) == ("grpo.py", ["--beta", "0.1"])


def test_nested_arithmetic_keeps_its_known_value():
    intent = extract_script(SLURM + "W=$(( (3 + 1) * $((2 * 2)) - 1 ))\npython fit.py --workers $W\n")
    assert intent.script_args == ["--workers", "15"]


def test_an_interpreter_looked_up_by_its_path_runs_the_program():
    intent = extract_script(SLURM + "$(command -v /opt/py39/bin/python3.9) fit.py --epochs 2\n")
    assert (intent.launcher, intent.entrypoint, intent.script_args) == ("python", "fit.py", ["--epochs", "2"])


def test_a_console_script_the_checkout_declares_is_the_program(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "tiny"\n[project.scripts]\n'
                                             'tiny-serve = "tiny.server:main"\n')
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "server.py").write_text("import torch\n\ndef main():\n    pass\n")
    intent = extract_script(SLURM + "stdbuf -oL tiny-serve --port 9000 > serve.log\n", base_dir=tmp_path)
    assert (intent.entrypoint, intent.script_args) == ("tiny-serve", ["--port", "9000"])


def test_a_console_script_named_for_a_framework_is_the_program():
    intent = extract_script(SLURM + "nice -n 5 xy-vllm --model m --tensor-parallel-size 2\n")
    assert (intent.entrypoint, intent.framework) == ("xy-vllm", "vllm")


def test_an_unknown_tool_alone_is_still_not_a_program():
    intent = extract_script(SLURM + "stdbuf -oL wandb sync runs/\n")
    assert intent.entrypoint is None


def test_an_enroot_container_s_options_are_never_the_program():
    # enroot start [options] [--] NAME|IMAGE [COMMAND] (NVIDIA/enroot doc/cmd/start.md): -w is --rw, a flag
    script = ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n"
              "srun enroot start -w -m /scratch:/scratch -e WANDB_MODE=offline --root -- ngc2409 "
              "sh -c 'cd /ws && exec torchrun --nproc_per_node 4 -m lab.pretrain --steps 10'\n")
    intent = extract_script(script)
    assert (intent.launcher, intent.entrypoint, intent.script_args) == ("torchrun", "-m lab.pretrain", ["--steps", "10"])
    assert (intent.container.runtime, intent.container.image) == ("enroot", "ngc2409")


def test_a_ray_job_s_driver_is_the_command_after_the_two_hyphens():
    # `ray job submit [OPTIONS] -- ENTRYPOINT...` (docs.ray.io, Ray Jobs CLI): the entrypoint comes last
    script = (SLURM + "ray start --head --num-gpus=2 --port=6379\n"
              "ray job submit --address http://127.0.0.1:8265 --working-dir . -- python3 tune_sweep.py --trials 4\n"
              "ray stop\n")
    intent = extract_script(script)
    assert (intent.launcher, intent.entrypoint, intent.script_args) == ("ray", "tune_sweep.py", ["--trials", "4"])


def test_the_job_s_arguments_in_a_launcher_s_options_are_not_the_program():
    # `sh job.sh --jobid 42`: "$@" are srun's options here, and sh -c's string holds the program
    script = ("#!/bin/sh\n# salloc -N 2 --gpus-per-node 4 --no-shell\n"
              "srun \"$@\" bash -lc 'torchrun --nnodes $SLURM_NNODES --nproc-per-node gpu fit.py --lr 1e-3'\n")
    intent = extract_script(script)
    assert (intent.launcher, intent.entrypoint, intent.script_args) == ("torchrun", "fit.py", ["--lr", "1e-3"])


def test_the_job_s_arguments_as_the_whole_command_stay_unknown():
    intent = extract_script(SLURM + 'srun -N 2 "$@"\n')
    assert intent.entrypoint is None and "given when the job is submitted" in " ".join(intent.notes)


def test_a_job_script_written_into_a_run_folder_then_submitted_from_there_is_read():
    # bash runs `sbatch job.sh` in the folder of the last `cd`: the here-document written there is the job
    script = ("#!/bin/bash\n#SBATCH -p cpu\nRUN=/scratch/me/runs/r_$(date +%s)\nmkdir -p \"$RUN\"\n"
              "cat > \"$RUN/job.sh\" <<EOF\n#!/bin/bash\n#SBATCH -p gpu\n#SBATCH --gres=gpu:2\n#SBATCH --ntasks-per-node=2\n"
              "srun python fit.py --out $RUN\nEOF\ncd \"$RUN\"\nsbatch job.sh\n")
    intent = extract_script(script)
    assert (intent.launcher, intent.entrypoint, intent.queue, intent.gpus_per_node) == ("srun", "fit.py", "gpu", 2)


def test_a_file_of_the_same_name_in_another_folder_is_not_the_job():
    script = ("#!/bin/bash\n#SBATCH -p cpu\ncat > /scratch/a/job.sh <<EOF\n#!/bin/bash\nsrun python fit.py\nEOF\n"
              "cd /scratch/b\nsbatch job.sh\n")
    assert extract_script(script).entrypoint is None


def test_a_program_given_to_python_on_its_input_is_refused_saying_so():
    script = SLURM + "srun python3 -u - --epochs 3 <<'PY'\nimport torch\nprint(torch.cuda.device_count())\nPY\n"
    intent = extract_script(script)
    assert intent.entrypoint is None and "entrypoint" in intent.missing
    assert "python at line 4 reads its program from its standard input" in " ".join(intent.notes)


def test_a_set_up_step_on_python_s_input_leaves_the_training_the_program():
    script = SLURM + "python - <<'PY'\nimport nltk; nltk.download('punkt')\nPY\nsrun python fit.py --k 2\n"
    intent = extract_script(script)
    assert (intent.entrypoint, intent.script_args) == ("fit.py", ["--k", "2"])


def test_an_inference_engine_then_its_client_ports_the_engine():
    # the engine drives the GPUs; the client (its name says it runs inference against it) is a step after
    script = (SLURM + "srun -N1 -n1 sglang serve --model-path org/m --tp 2 --port 30000 &\nsleep 120\n"
              "srun -N1 -n1 python run_inference_requests.py --port 30000\n")
    intent = extract_script(script)
    assert (intent.entrypoint, intent.framework) == ("sglang", "sglang")


def test_a_console_script_declared_in_setup_cfg_is_the_program(tmp_path):
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = lab\n\n[options.entry_points]\nconsole_scripts =\n"
                                        "    lab-fit = lab.cli.fit:main\n")
    intent = extract_script(SLURM + "lab-fit --epochs 2 | tee fit.log\n", base_dir=tmp_path)
    assert (intent.entrypoint, intent.script_args) == ("lab-fit", ["--epochs", "2"])


def test_the_trace_names_a_python_file_run_as_the_command(tmp_path):
    """The command line is only in a file the job reads at run time; with the site's interpreter
    missing, bash runs the file itself: the trace's record of it is the program (trusted: our script)."""
    from maple_ci.port import program_from_trace

    (tmp_path / "fit.py").write_text("import torch\n")
    (tmp_path / "cmd.txt").write_text("$(command -v /opt/site/py39/bin/python3.9) fit.py --epochs 2\n")
    job = tmp_path / "job.sh"
    job.write_text(SLURM + 'eval "$(cat cmd.txt)"\n')
    intent = extract_script(job.read_text(), base_dir=tmp_path)
    assert intent.entrypoint is None
    intent = program_from_trace(intent, job, trusted=True)
    assert (intent.entrypoint, intent.script_args) == ("fit.py", ["--epochs", "2"])


def test_a_launch_under_timeout_is_read_through_it_and_the_timeout_named():
    # timeout(1): `timeout [OPTION] DURATION COMMAND [ARG]...`; -s and -k take a value
    script = ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n"
              "timeout -s USR1 -k 120 --foreground 23h srun torchrun --nproc_per_node 4 fit.py --resume auto\n")
    intent = extract_script(script)
    assert (intent.launcher, intent.entrypoint, intent.script_args) == ("torchrun", "fit.py", ["--resume", "auto"])
    assert any("timeout -s USR1 -k 120 --foreground 23h" in note for note in intent.notes)


def test_the_trace_runs_a_launch_under_timeout(tmp_path):
    from maple_ci.trace import trace_script

    job = tmp_path / "job.sh"
    job.write_text("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=2\n"
                   "timeout --kill-after=60 2h srun python fit.py --k 3\n")
    trace = trace_script(job, trusted=True)
    assert [rank.program for rank in trace.ranks] == [["fit.py", "--k", "3"]] * 2


def test_the_trace_gives_the_launcher_and_ranks_of_the_program_it_finds(tmp_path):
    """A launch line read from a file at run time: the trace's rank 0 came through srun, 2 of them on
    the directives' one node; where the trace's allocation is not the job's (its two stand-in nodes for
    a size it does not read), the launcher and world stay the reader's."""
    from maple_ci.port import program_from_trace

    (tmp_path / "fit.py").write_text("import torch\n")
    (tmp_path / "cmd.txt").write_text("python fit.py --lr 0.1\n")
    for directives, launch in (("#SBATCH -N 1\n#SBATCH --ntasks-per-node=2\n", ("srun", 2)),
                               ("#SBATCH --ntasks-per-node=2\n", ("python", None))):
        job = tmp_path / "job.sh"
        job.write_text("#!/bin/bash\n" + directives + 'srun -l bash -c "$(cat cmd.txt)"\n')
        intent = program_from_trace(extract_script(job.read_text(), base_dir=tmp_path), job, trusted=True)
        assert (intent.entrypoint, (intent.launcher, intent.world_size)) == ("fit.py", launch)


def test_a_container_runtime_named_by_a_variable_is_read_as_that_runtime():
    # `$APPTAINER exec`: the site's module sets the runtime's path; its options and image are never the program
    script = ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n"
              "srun -l $APPTAINER exec --nv -B /scratch:/scratch lab.sif torchrun --nproc_per_node 4 -m lab.fit --k 1\n")
    intent = extract_script(script)
    assert (intent.launcher, intent.entrypoint, intent.script_args) == ("torchrun", "-m lab.fit", ["--k", "1"])
    assert (intent.container.runtime, intent.container.image) == ("apptainer", "lab.sif")


def test_an_unknown_variable_before_a_verb_that_is_no_container_s_stays_options():
    intent = extract_script(SLURM + "srun $EXTRA exec python fit.py --k 1\n")
    assert (intent.entrypoint, intent.container) == ("fit.py", None)


def test_an_interpreter_named_by_a_variable_runs_its_module():
    # `$PYTHON` set by the job's environment (a module, a venv): python's own -m, never srun's -m (distribution)
    intent = extract_script(SLURM + "srun --cpu-bind=cores $PYTHON -m lab.fit --k 1\n")
    assert (intent.launcher, intent.entrypoint, intent.script_args) == ("srun", "-m lab.fit", ["--k", "1"])
    intent = extract_script(SLURM + "srun -o $PYTHON_LOG python fit.py --k 1\n")  # a value, not the interpreter
    assert (intent.entrypoint, intent.script_args) == ("fit.py", ["--k", "1"])


def test_a_launcher_or_runner_named_by_a_variable_is_read_as_it():
    # a module sets $MPIRUN / $CONDA to the tool's path: the words after it are that tool's
    script = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n$MPIRUN -np 8 --map-by ppr:4:node python fit.py --k 1\n"
    intent = extract_script(script)
    assert (intent.launcher, intent.entrypoint, intent.script_args) == ("mpirun", "fit.py", ["--k", "1"])
    intent = extract_script(SLURM + "srun ${CONDA_EXE} run -n lab python fit.py --k 1\n")
    assert (intent.entrypoint, intent.python_env) == ("fit.py", "conda activate lab")
    assert extract_script(SLURM + "srun $SRUN_ARGS python fit.py\n").entrypoint == "fit.py"  # options only the job knows
