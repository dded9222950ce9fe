"""Issue 25, unseen set 2026-11-29c: classes of launch scripts that ported wrong or not at all,
each tested with small scripts written for this test in styles the corpus does not hold.

1. A script that submits a here-document: with no script file on the submit line, sbatch and qsub
   read the job script from standard input ("sbatch ... [script]": "If no file name is given,
   sbatch reads a script from standard input", https://slurm.schedmd.com/sbatch.html, read
   2026-11-29). bash expands $-words of a here-document whose delimiter is unquoted, in the outer
   shell, before the job sees the text; a quoted delimiter keeps the text as written; `\\$` gives a
   literal `$` (bash(1) "Here Documents", https://www.gnu.org/software/bash/manual/bash.html#Here-Documents,
   read 2026-11-29).
2. Job variables with a counterpart on the target, by concept (the schedulers' job_vars tables):
   Slurm's node index and a site's node-local scratch folder on a PBS target.
"""

import subprocess

import pytest

from maple_ci.errors import MapleError
from maple_ci.extract import extract_script
from maple_ci.schedulers.jobvars import translate
from maple_ci.trace import trace_script

# Submit-line options win over the text's own directives (sbatch: "options on the command line
# override the same options in the script", same page).
_PIPED = """#!/bin/bash
# driver: the job script piped from cat
width=128
cat <<END_OF_JOB | sbatch --nodes=3 --time=00:30:00
#!/bin/bash
#SBATCH --nodes=1
#SBATCH --gpus-per-node=4
srun --ntasks-per-node=4 python fit.py --width $width
END_OF_JOB
"""


def test_a_here_document_piped_into_sbatch_is_the_job_and_the_submit_line_wins(tmp_path):
    intent = extract_script(_PIPED, tmp_path, "sweep.sh", tmp_path)
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (3, 4, 12)
    assert intent.walltime == "00:30:00"
    assert intent.entrypoint == "fit.py"
    assert intent.script_args == ["--width", "128"]  # the outer shell's value, expanded by bash before sbatch reads it
    assert intent.notes[0].startswith("this script submits the here-document")


_QUOTED = """#!/bin/bash
OUTER_EPOCHS=7
qsub <<'JOB'
#!/bin/bash
#PBS -l select=2:ngpus=4
#PBS -l walltime=03:00:00
#PBS -q workq
cd $PBS_O_WORKDIR
mpiexec -n 8 --ppn 4 python solve.py --epochs $OUTER_EPOCHS
JOB
"""


def test_a_quoted_delimiter_keeps_the_job_text_as_written_for_qsub(tmp_path):
    intent = extract_script(_QUOTED, tmp_path, "launch.sh", tmp_path)
    assert intent.scheduler == "pbs"
    assert (intent.nodes, intent.world_size, intent.walltime, intent.queue) == (2, 8, "03:00:00", "workq")
    # not the outer shell's 7: with 'JOB' quoted the job reads its own (unset) OUTER_EPOCHS
    assert intent.script_args == ["--epochs", "$OUTER_EPOCHS"]


_TWO = """#!/bin/bash
sbatch <<EOF
#!/bin/bash
#SBATCH -N 1
srun python a.py
EOF
sbatch <<EOF
#!/bin/bash
#SBATCH -N 2
srun python b.py
EOF
"""


def test_two_different_here_documents_are_not_guessed_between(tmp_path):
    intent = extract_script(_TWO, tmp_path, "both.sh", tmp_path)
    assert intent.entrypoint is None
    assert not any("submits the here-document" in note for note in intent.notes)


def test_a_here_document_fed_to_python_is_not_a_job(tmp_path):
    text = "#!/bin/bash\n#SBATCH -N 1\npython - <<EOF\nprint(1)\nEOF\nsrun python train.py\n"
    intent = extract_script(text, tmp_path, "job.sh", tmp_path)
    assert intent.entrypoint == "train.py"
    assert not any("here-document" in note for note in intent.notes)


# 2. Job variables with a counterpart on the target, by concept (the schedulers' job_vars).


def test_slurms_node_index_and_local_id_read_as_pals_with_the_batch_shells_value():
    """A word the batch shell expands (the program's arguments) gets 0 there, the first node's
    index; a rank's own shell under PALS mpiexec gets PALS_NODEID."""
    assert translate("--shard=$SLURM_NODEID.$SLURM_LOCALID", "pbs", 4) == \
        "--shard=${PALS_NODEID:-0}.${PALS_LOCAL_RANKID:-0}"
    assert translate("$(( SLURM_NODEID * 4 ))", "pbs", 4) == "$(( PALS_NODEID * 4 ))"  # unset is 0 in arithmetic
    assert translate("${PALS_NODEID}", "slurm", 4) == "${SLURM_NODEID:-0}"


def test_a_sites_node_local_scratch_reads_as_the_pbs_jobs_tmpdir():
    assert translate("--cache=${SLURM_TMPDIR}/shards", "pbs", 4) == "--cache=${TMPDIR}/shards"


def test_tmpdir_of_any_process_is_never_read_as_a_source_job_variable():
    # a Slurm script's own $TMPDIR is the target's, not Mila's SLURM_TMPDIR
    assert translate("$TMPDIR/run", "slurm", 4) == "$TMPDIR/run"


def test_a_target_without_the_concept_still_refuses_naming_it():
    with pytest.raises(MapleError, match="SLURM_TMPDIR"):
        translate("$SLURM_TMPDIR/x", "flux", 4)  # Flux's table names no node-local folder


_BATCH_IDS = ("SLURM_NODEID", "SLURM_LOCALID", "SLURM_PROCID")


@pytest.mark.cluster
def test_the_traces_batch_shell_has_the_task_ids_real_slurm_gives_it(tmp_path, slurm_cluster):
    """The source's batch shell expands `++node_id=$SLURM_NODEID` once: the trace must give it what
    the real batch step has (the local test cluster's Slurm 22.05), or a port's `${PALS_NODEID:-0}`
    would read as a change."""
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -N 2 -t 2\n" + "".join(f'echo "{n}=${n}"\n' for n in _BATCH_IDS))
    out = tmp_path / "out.txt"
    done = subprocess.run(["sbatch", "--wait", "-o", str(out), "--chdir", str(tmp_path), str(script)],
                          capture_output=True, text=True, timeout=180, env=slurm_cluster.job_env)
    assert done.returncode == 0, done.stderr
    real = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    trace = trace_script(script, checkout=tmp_path)
    assert {name: trace.job_env.get(name) for name in _BATCH_IDS} == real


def test_a_submit_lines_argument_from_the_submitters_loop_is_given_per_submission(tmp_path):
    """`for s in 1 2; do sbatch job.sh --seed=$s; done`: the submitter's shell expands $s before
    sbatch passes the job its arguments; the port keeps it a reference the job is given at submit time."""
    (tmp_path / "job.sh").write_text("#!/bin/bash\n#SBATCH -N 1 --gpus-per-node=1\nsrun python fit.py \"$@\"\n")
    text = "#!/bin/bash\nfor s in 1 2; do\n  sbatch job.sh --seed=$s --out 'runs/a b'\ndone\n"
    intent = extract_script(text, tmp_path, "sweep.sh", tmp_path)
    assert intent.given_env == ["s"]
    assert intent.script_args == ["--seed=$s", "--out", "runs/a b"]
