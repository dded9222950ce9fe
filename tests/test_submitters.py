"""Issue 25 class 7: a job script with no directives of its own is sized by the submit line of
another file of the checkout that submits it. sbatch and qsub read their command-line options as
the job's ("options on the command line override the same options in the script",
https://slurm.schedmd.com/sbatch.html, read 2026-11-29). Each test writes its own small checkout.
"""

from pathlib import Path

from maple_ci.extract import extract
from traced_port import traced_port

_JOB = """#!/bin/bash
module load cuda
srun --ntasks-per-node=4 python fit.py --lr 0.1
"""


def _checkout(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / ".git").mkdir()
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def _extract(root: Path, name: str):
    return extract((root / name).read_text(), str(root / name))


def test_the_submitters_options_size_a_job_without_directives(tmp_path):
    root = _checkout(tmp_path, {"jobs/job.sh": _JOB, "jobs/fit.py": "",
                                "launch/go.sh": "#!/bin/bash\ncd ..\n"
                                "JOB=$(sbatch --parsable -N 2 -t 1:00:00 --gres=gpu:4 jobs/job.sh) && echo $JOB\n"})
    intent = _extract(root, "jobs/job.sh")
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (2, 4, 8)
    assert intent.walltime == "01:00:00"
    assert (intent.entrypoint, intent.script_args) == ("fit.py", ["--lr", "0.1"])
    assert "launch/go.sh (line 3) submits it" in intent.notes[0]


def test_a_qsub_line_beside_the_job_sizes_a_pbs_job(tmp_path):
    job = "#!/bin/bash\ncd $PBS_O_WORKDIR\nmpiexec -n 8 --ppn 4 python solve.py\n"
    root = _checkout(tmp_path, {"run/solve.sh": job, "run/solve.py": "",
                                "run/queue_all": "#!/bin/sh\nqsub -l select=2:ngpus=4 -l walltime=02:30:00 solve.sh\n"})
    intent = _extract(root, "run/solve.sh")
    assert intent.scheduler == "pbs"
    assert (intent.nodes, intent.walltime) == (2, "02:30:00")


def test_submitters_that_disagree_leave_the_job_as_written_and_say_so(tmp_path):
    root = _checkout(tmp_path, {"job.sh": _JOB, "fit.py": "",
                                "small.sh": "sbatch -N 1 --gres=gpu:4 job.sh\n", "big.sh": "sbatch -N 8 --gres=gpu:4 job.sh\n"})
    intent = _extract(root, "job.sh")
    assert intent.nodes is None
    assert any("submitted with different options" in note and "big.sh" in note and "small.sh" in note
               for note in intent.notes)


def test_a_size_from_the_submitters_variables_is_not_guessed(tmp_path):
    root = _checkout(tmp_path, {"job.sh": _JOB, "fit.py": "", "sweep.sh": "for n in 1 2 4; do sbatch -N $n job.sh; done\n"})
    intent = _extract(root, "job.sh")
    assert intent.nodes is None
    assert any("sets options from variables" in note and "sweep.sh (line 1): --nodes=$n" in note for note in intent.notes)


def test_options_a_submitter_sets_per_submission_are_named_and_the_others_read(tmp_path):
    submit = "for lr in 0.1 0.01; do\n  sbatch --export=ALL,LR=$lr -J fit_$lr -N 2 -t 30 --gres=gpu:4 job.sh\ndone\n"
    root = _checkout(tmp_path, {"job.sh": _JOB, "fit.py": "", "sweep.sh": submit})
    intent = _extract(root, "job.sh")
    assert (intent.nodes, intent.walltime) == (2, "00:30:00")
    assert "not read, as its shell sets them per submission: sweep.sh (line 2): --job-name=fit_$lr" in intent.notes[0]


def test_another_file_of_the_same_name_is_not_this_job(tmp_path):
    root = _checkout(tmp_path, {"a/job.sh": _JOB, "a/fit.py": "", "b/job.sh": _JOB,
                                "submit.sh": "sbatch -N 4 --gres=gpu:4 b/job.sh\n"})
    assert _extract(root, "a/job.sh").nodes is None
    assert _extract(root, "b/job.sh").nodes == 4


def test_a_job_with_its_own_directives_keeps_them(tmp_path):
    job = "#!/bin/bash\n#SBATCH --nodes=3\n#SBATCH --gpus-per-node=4\n" + _JOB.split("\n", 1)[1]
    root = _checkout(tmp_path, {"job.sh": job, "fit.py": "", "submit.sh": "sbatch job.sh\n"})
    intent = _extract(root, "job.sh")
    assert intent.nodes == 3
    assert not any("submits it" in note for note in intent.notes)


def test_the_search_for_a_submitter_is_bounded_by_entries_not_scripts(tmp_path, monkeypatch):
    """A checkout holding a data set: the walk stops after MAX_FILES entries, whatever they are."""
    from maple_ci.extract import submitters

    monkeypatch.setattr(submitters, "MAX_FILES", 50)
    data = {f"data/{i:03}.npy": "" for i in range(60)}
    root = _checkout(tmp_path, {**data, "job.sh": _JOB, "fit.py": "", "zz/submit.sh": "sbatch -N 2 --gres=gpu:4 ../job.sh\n"})
    assert _extract(root, "job.sh").nodes is None
    monkeypatch.setattr(submitters, "MAX_FILES", 100)
    assert _extract(root, "job.sh").nodes == 2


def test_the_trace_gate_agrees_with_the_port_of_a_job_sized_by_its_submitter(tmp_path):
    """Source and port both traced (bash in bubblewrap): 2 nodes of 4 ranks, as the submit line asks."""
    root = _checkout(tmp_path, {"jobs/job.sh": _JOB, "jobs/fit.py": "import torch\n",
                                "submit.sh": "sbatch -N 2 -t 1:00:00 --gres=gpu:4 jobs/job.sh\n"})
    code, trace, out = traced_port(root / "jobs/job.sh", "polaris")
    assert code == 0 and trace and trace[0]["ok"], trace
    assert "select=2:" in (out / "job.pbs").read_text()
