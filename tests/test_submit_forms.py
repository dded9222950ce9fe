"""Jobs submitted in the scheduler's other forms (issue 25, unseen sets c and d): LSF's `bsub
[options] command [arguments]`, which runs the command line as the job, and `bsub < job.sh`, which
reads the job script (and its #BSUB lines) from standard input (IBM LSF 10.1, bsub,
https://www.ibm.com/docs/en/spectrum-lsf/10.1.0?topic=reference-bsub, read 2026-11-29); Slurm's
`sbatch --wrap="CMD"`, which wraps the command string in an sh script (sbatch(1),
https://slurm.schedmd.com/sbatch.html, read 2026-11-29). No LSF ships in a registry: these read the
scripts as text, the way maple reads every source scheduler's. Scripts of this file's own style."""

from maple_ci.extract import extract


def submitter(tmp_path, text: str, **files):
    """The intent of a submitter script `go.sh` (with `files` beside it), read as maple reads a file."""
    for name, content in {**files, "go.sh": text}.items():
        (tmp_path / name).write_text(content)
    return extract(text, str(tmp_path / "go.sh"))


def test_a_command_on_the_bsub_line_is_the_job_with_the_line_s_options_as_its_directives(tmp_path):
    intent = submitter(tmp_path, "mkdir -p runs\nbsub -q short -P vision -W 45 -gpu \"num=2\" -o runs/%J.out "
                       "python3 fit.py --lr 3e-4\n", **{"fit.py": "import torch\n"})
    assert (intent.scheduler, intent.entrypoint, intent.script_args) == ("lsf", "fit.py", ["--lr", "3e-4"])
    assert (intent.queue, intent.account, intent.walltime, intent.gpus_per_node) == ("short", "vision", "00:45:00", 2)
    assert any("submits its command line" in note for note in intent.notes)


def test_a_job_script_given_to_bsub_on_its_input_is_read_with_its_own_directives(tmp_path):
    (tmp_path / "nightly.lsf").write_text("#!/bin/bash\n#BSUB -nnodes 3\n#BSUB -W 2:00\n#BSUB -P bio42\n"
                                          "jsrun -n 18 -r 6 -a 1 -g 1 python fold.py --epochs 5\n")
    text = "#!/bin/bash\nset -e\nbsub < nightly.lsf\n"
    (tmp_path / "submit.sh").write_text(text)
    intent = extract(text, str(tmp_path / "submit.sh"))
    assert (intent.scheduler, intent.nodes, intent.walltime, intent.account) == ("lsf", 3, "02:00:00", "bio42")
    assert (intent.launcher, intent.entrypoint, intent.world_size) == ("jsrun", "fold.py", 18)


def test_a_bsub_command_that_is_a_script_outside_the_checkout_is_refused_by_name(tmp_path):
    """The job's program is in a file this checkout does not hold: no port can run it as the source did."""
    intent = submitter(tmp_path, "bsub -n 1 -q gpu -gpu \"num=1\" /bin/bash /home/someone/run/train.sh\n")
    assert intent.scheduler == "lsf" and intent.entrypoint is None
    assert any("/home/someone/run/train.sh" in note for note in intent.notes)


def test_sbatch_wrap_is_a_job_running_its_command_string(tmp_path):
    intent = submitter(tmp_path, "sbatch -N 1 --gres=gpu:2 -t 30 -A chem7 --wrap 'module load cuda; python3 fit.py --fold 2'\n",
                       **{"fit.py": "import torch\n"})
    assert (intent.scheduler, intent.entrypoint, intent.script_args) == ("slurm", "fit.py", ["--fold", "2"])
    assert (intent.nodes, intent.gpus_per_node, intent.walltime, intent.account) == (1, 2, "00:30:00", "chem7")


def test_a_submitted_script_outside_the_checkout_keeps_the_submit_line_s_size_and_says_where_it_is(tmp_path):
    intent = submitter(tmp_path, "sbatch --nodes 2 --gres gpu:4 --time 90 -p long /home/them/jobs/train.sbatch\n")
    assert (intent.scheduler, intent.nodes, intent.walltime, intent.queue) == ("slurm", 2, "01:30:00", "long")
    assert intent.entrypoint is None  # the program is in a file this checkout does not hold: refused by name
    assert any("/home/them/jobs/train.sbatch (not in the checkout)" in note for note in intent.notes)


def test_a_submitter_that_writes_its_job_line_by_line_submits_that_text(tmp_path):
    """`printf ... > job.sh; echo ... >> job.sh; sbatch job.sh`: the submitted file is the script's own
    output, read as bash writes it (tests/test_written_jobs.py); the submitter's own directives are
    its own job's, not the submitted one's (sbatch reads the options of its command line and of the
    file it submits, https://slurm.schedmd.com/sbatch.html, read 2026-11-29), so no walltime comes
    from them (before: the submitter's directives, and no program)."""
    intent = submitter(tmp_path, "#!/bin/bash\n#SBATCH -N 1\n#SBATCH -t 10\nprintf '#!/bin/bash\\n' > job.sh\n"
                       "echo 'srun python fit.py' >> job.sh\nsbatch job.sh\n")
    assert (intent.scheduler, intent.launcher, intent.entrypoint) == ("slurm", "srun", "fit.py")
    assert intent.walltime is None
