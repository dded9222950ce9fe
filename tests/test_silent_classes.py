"""Issue 25: classes of ports that passed every check while the trace of the port differed from the
source's without its header saying so. Each class is carried or named by a rule (job arrays,
positional arguments, set-up a wrapper runs, a program that is a command of its own); each test
ports a script written here, in a style the corpus does not hold, and traces the source and the
port with real bash (maple trace): no difference may be left that the header does not name, or the
port must stop itself saying why. PBS is not installed here: its ports are traced on the emulated
allocation (a stand-in for qsub's job, built from the PBS unit's variables), as the other tests do.
"""

import subprocess

import pytest

from maple_ci.extract import extract
from maple_ci.port import port_intent
from maple_ci.schedulers.arrays import directive_value, parse
from maple_ci.trace import trace_script
from maple_ci.trace.compare import SAMPLE_ARGS, SUBMIT_ARGS, compare, header_of, stops_itself

TARGETS = ["perlmutter", "polaris"]  # Slurm and PBS targets


def ported(tmp_path, name: str, text: str, files: dict = {}):
    """(the source's trace, [(result, the port's trace, unnamed differences)]) for each target."""
    for path, body in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(body)
    source_path = tmp_path / name
    source_path.write_text(text)
    args = SAMPLE_ARGS if SUBMIT_ARGS.search(text) else ()
    intent = extract(text, name, base_dir=tmp_path, root=tmp_path)
    results = port_intent(intent, TARGETS, name, tmp_path / "out", source_text=text)
    source = trace_script(source_path, cluster=intent.source_cluster, checkout=tmp_path, args=args, trusted=True)
    found = []
    for result in results:
        port = trace_script(source_path, cluster=result.cluster, nodes=len(source.allocation.nodes), checkout=tmp_path,
                            args=args, trusted=True, text=result.script) if result.status == "ok" else None
        found.append((result, port, compare(source, port, header_of(result.script)) if port else None))
    return source, found


SWEEP = """#!/bin/bash
#SBATCH --job-name=sweep --time=04:00:00
#SBATCH --gpus-per-node=1 --nodes=1
#SBATCH -a 3-9:3%2
SHARD=$SLURM_ARRAY_TASK_ID
python score.py --shard "$SHARD" --of $SLURM_ARRAY_TASK_COUNT --first=${SLURM_ARRAY_TASK_MIN}
"""


def test_a_job_array_is_carried_in_the_targets_form_with_its_index(tmp_path):
    source, found = ported(tmp_path, "sweep.sh", SWEEP, {"score.py": "print('x')\n"})
    assert source.ranks[-1].program[-5:] == ["--shard", "3", "--of", "3", "--first=3"]
    by_cluster = {result.cluster: (result, port, diff) for result, port, diff in found}
    slurm, _, slurm_diff = by_cluster["perlmutter"]
    pbs, pbs_trace, pbs_diff = by_cluster["polaris"]
    assert "#SBATCH --array=3-9:3%2" in slurm.script
    assert not [line for line in header_of(slurm.script).splitlines() if "not carried" in line and "array" in line]
    # PBS: one range with a step; the count and the first index are the constants the index set fixes
    assert "#PBS -J 3-9:3%2" in pbs.script and '"$PBS_ARRAY_INDEX"' in pbs.script and "--of 3 --first=3" in pbs.script
    assert "are written as 3, 3 and 9" in header_of(pbs.script)  # the constants are a named translation
    assert slurm_diff == [] and pbs_diff == [] and pbs_trace.ranks[-1].program[-5:] == ["--shard", "3", "--of", "3", "--first=3"]


def test_an_array_a_target_cannot_write_is_refused_naming_it(tmp_path):
    text = "#!/bin/bash\n#SBATCH --array=1,4,7\n#SBATCH --gpus-per-node=1\npython fold.py --fold $SLURM_ARRAY_TASK_ID\n"
    (tmp_path / "fold.py").write_text("print(1)\n")
    intent = extract(text, "folds.sh", base_dir=tmp_path, root=tmp_path)
    results = {r.cluster: r for r in port_intent(intent, ["polaris", "elcapitan"], "folds.sh", tmp_path / "out",
                                                 source_text=text)}
    assert results["polaris"].status == "unsupported" and "index list 1,4,7" in results["polaris"].reason
    assert results["elcapitan"].status == "unsupported" and "flux batch has none" in results["elcapitan"].reason


@pytest.mark.parametrize("directive, slurm, pbs", [
    ("--array=0-11", "0-11", "0-11"), ("-J 1-8:2", "1-8:2", "1-8:2"), ('-J "grid[1-20]%5"', "1-20%5", "1-20%5"),
    ("-t 2-6", "2-6", "2-6"), ("--array=1,5", "1,5", None), ("--array=9-3", None, None)])
def test_array_directives_read_as_each_scheduler_writes_them(directive, slurm, pbs):
    found = parse(directive)
    assert (found.slurm() if found else None) == slurm
    if found:
        assert directive_value(found.slurm(), "pbs")[0] == pbs


POSITIONAL = """#!/bin/bash
#SBATCH --nodes=1 --gpus-per-node=1 --time=01:00:00
python eval.py --ckpt "$1" --data=/data/$2
"""


def test_a_positional_parameter_is_carried_as_the_jobs_argument(tmp_path):
    source, found = ported(tmp_path, "eval.sh", POSITIONAL, {"eval.py": "print(1)\n"})
    assert source.ranks[-1].program[-3:] == ["--ckpt", SAMPLE_ARGS[0], "--data=/data/"]
    for result, port, diff in found:
        assert '"$1"' in result.script and "'$1'" not in result.script
        assert "takes the job's own arguments ($1, $2)" in header_of(result.script)
        assert diff == [], (result.cluster, diff)


WRAPPED = """#!/bin/bash
#SBATCH -N 1 --gpus-per-node=1 -t 00:30:00
srun bootstrap.sh python run.py
"""
BOOTSTRAP = "#!/bin/bash\nset -e\npython -m pip install --user -r deps.txt\nexec \"$@\"\n"


def test_set_up_a_wrapper_runs_is_named_with_its_line(tmp_path):
    _, found = ported(tmp_path, "wrapped.sh", WRAPPED, {"run.py": "print(1)\n", "bootstrap.sh": BOOTSTRAP})
    for result, port, diff in found:
        assert "`python -m pip install --user -r deps.txt` (bootstrap.sh line 3)" in header_of(result.script)
        assert "is kept in front of the program" not in result.script
        assert [d for d in diff or [] if d.kind == "setup"] == [], (result.cluster, diff)


CONSOLE = """#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=4 --gpus-per-node=4 --time=02:00:00
source ~/venvs/sim/bin/activate
srun simtrain fit --config conf/run.yaml
"""


def test_a_console_script_the_target_lacks_stops_the_port_naming_it(tmp_path):
    _, found = ported(tmp_path, "console.sh", CONSOLE, {"conf/run.yaml": "a: 1\n"})
    for result, port, diff in found:
        assert "the program simtrain is a command of its own" in header_of(result.script)
        assert stops_itself(port), (result.cluster, port.stderr)
        assert "maple-ci: simtrain is not a command on" in port.stderr and "--python-env" in port.stderr


SUBMITTER = """#!/bin/bash
for seed in 11 22 33; do
  sbatch --export=ALL,SEED=$seed,MODE=fast -t 01:00:00 --gres=gpu:1 one_seed.sh
done
"""
ONE_SEED = "#!/bin/bash\npython fit.py --seed $SEED --mode $MODE\n"


def test_a_variable_the_submitter_sets_per_submission_must_be_given(tmp_path):
    """sbatch --export=ALL,SEED=$seed in a loop: the port is one job; without SEED it stops naming
    it (bash's ${SEED:?}), with it the guard lets the job on (real bash)."""
    source, found = ported(tmp_path, "sweep_submit.sh", SUBMITTER, {"one_seed.sh": ONE_SEED, "fit.py": "print(1)\n"})
    assert source.ranks[-1].program[-4:] == ["--seed", "33", "--mode", "fast"]
    for result, port, diff in found:
        given = [line for line in header_of(result.script).splitlines() if "per submission" in line]
        assert len(given) == 1 and "sets SEED per submission" in given[0] and "MODE" not in given[0]
        assert stops_itself(port) and "maple-ci: SEED is not set" in port.stderr, (result.cluster, port.stderr)
        guard = next(line for line in result.script.splitlines() if line.startswith(': "${SEED:?'))
        ran = subprocess.run(["bash", "-c", f"set -e; {guard}; echo on"], env={"SEED": "22", "PATH": "/usr/bin:/bin"},
                             capture_output=True, text=True)
        assert ran.stdout == "on\n"
