"""Issue 25 class 7: a job script the submitter writes at run time line by line (`echo ... > job`,
`printf ... >> job`, `cat >> job <<EOF`) and then submits is the job, directives included.

Semantics from bash's manual (https://www.gnu.org/software/bash/manual/bash.html, "Redirecting
Output" / "Appending Redirected Output" and the `echo`/`printf` builtins, read 2026-11-29): `>`
truncates the file, `>>` appends; echo joins its arguments with spaces and ends with a newline
unless -n, reading backslash escapes only with -e; printf reuses its format while arguments remain.
The echo/printf checks run real bash on the same words, so they fail if maple's reading drifts.
"""

import subprocess

import pytest

from maple_ci.extract import extract_script
from maple_ci.extract.writes import echo_output, printf_output
from traced_port import traced_port

_PRINTF_PBS = r"""#!/bin/bash
# writes the PBS job with printf, then submits it
depth=24
job=run_${depth}.pbs
printf '#!/bin/bash\n' > $job
printf '#PBS -l select=%d:ngpus=4\n' 2 >> $job
printf '#PBS -l %s\n' walltime=02:00:00 >> $job
printf '%s\n' "cd \$PBS_O_WORKDIR" "mpiexec -n 8 --ppn 4 python solve.py --depth ${depth}" >> $job
qsub $job
"""


def test_a_printf_written_pbs_job_is_the_job_with_its_directives(tmp_path):
    intent = extract_script(_PRINTF_PBS, tmp_path, "sweep.sh", tmp_path)
    assert intent.scheduler == "pbs"
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (2, 4, 8)
    assert intent.walltime == "02:00:00"
    assert (intent.entrypoint, intent.script_args) == ("solve.py", ["--depth", "24"])


_TRUNCATED = """#!/bin/bash
echo '#!/bin/bash' > job.sh
echo '#SBATCH --nodes=8' >> job.sh
echo 'srun python draft.py' >> job.sh
# the draft above is thrown away: `>` starts the file again
echo '#!/bin/bash' > job.sh
echo -e '#SBATCH --nodes=2\\n#SBATCH --gpus-per-node=4' >> job.sh
echo "srun --ntasks-per-node=4 python fit.py --lr 0.1" >> job.sh
sbatch --time=01:00:00 job.sh
"""


def test_truncation_and_append_are_read_as_bash_does(tmp_path):
    intent = extract_script(_TRUNCATED, tmp_path, "submit.sh", tmp_path)
    assert (intent.nodes, intent.gpus_per_node, intent.world_size) == (2, 4, 8)
    assert (intent.entrypoint, intent.script_args) == ("fit.py", ["--lr", "0.1"])
    assert intent.walltime == "01:00:00"  # the submit line's option is written in as a directive


_CAT_APPEND = """#!/bin/bash
cat > job.sh <<'HEAD'
#!/bin/bash
#SBATCH --nodes=2
#SBATCH --gpus-per-node=4
HEAD
cat >> job.sh <<'BODY'
srun --ntasks-per-node=4 python fit.py
BODY
sbatch job.sh
"""


def test_a_here_document_appended_with_cat_keeps_the_text_before_it(tmp_path):
    intent = extract_script(_CAT_APPEND, tmp_path, "submit.sh", tmp_path)
    assert (intent.nodes, intent.world_size, intent.entrypoint) == (2, 8, "fit.py")


def _bash(command: str, args: list[str]) -> str:
    return subprocess.run(["bash", "-c", f'{command} "$@"', "bash", *args], capture_output=True, text=True,
                          check=True, timeout=10).stdout


@pytest.mark.parametrize("args", [["a", "b"], ["-n", "x y"], ["-e", r"1\n2\t3"], [r"no\nescape"],
                                  ["-ne", r"a\nb"], ["-eE", r"kept\n"], ["-x", "dash"]])
def test_echo_prints_what_bash_prints(args):
    assert echo_output(args) == _bash("echo", args)


@pytest.mark.parametrize("args", [[r"%s\n", "a", "b", "c"], [r"#PBS -l select=%d:ngpus=%d\n", "2", "4"],
                                  [r"%s=%s\n", "only"], [r"100%% done\n"], [r"plain"]])
def test_printf_prints_what_bash_prints(args):
    assert printf_output(args) == _bash("printf", args)


def test_the_trace_gate_agrees_with_the_port_of_a_written_job(tmp_path):
    """Source and port both traced (bash in bubblewrap): the port of the echo-written job runs the
    program the submitted file runs, with its arguments, on 2 nodes."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "fit.py").write_text("import torch\n")
    (tmp_path / "submit.sh").write_text(_TRUNCATED)
    code, trace, out = traced_port(tmp_path / "submit.sh", "polaris")
    assert code == 0 and trace and trace[0]["ok"], trace
    assert "fit.py --lr 0.1" in (out / "submit.pbs").read_text()
