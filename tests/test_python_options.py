"""Python's own command-line options (issue 25, D: every word accounted for), read by one table
(maple_ci/launchers/options.py, from docs.python.org's "Command line and environment"): the reader,
`--entrypoint`, the trace's python stand-in and the gate's comparison all split `python OPTIONS
PROGRAM ARGS` the same way, so `python -W ignore train.py` runs train.py, never a program `ignore`.
A port carries each option as the variable python reads for it (-u as PYTHONUNBUFFERED=1) where
the values table lets a port set that variable, and names the rest in its header; the gate fails a
port that neither gives the variable nor names the option. Scripts written for these tests, in styles the corpus does not hold
(combined short options, attached values, -X importtime, --check-hash-based-pycs).
"""

from pathlib import Path

import pytest

from maple_ci.extract import extract_script, program_line
from maple_ci.launchers.options import PYTHON_OPTIONS_NOTE, python_command, python_option_env
from maple_ci.trace import trace_script
from maple_ci.trace.compare import compare, header_of


@pytest.mark.parametrize("argv, options, runs", [
    (["-W", "ignore", "train.py", "-v"], ["-W", "ignore"], ["train.py", "-v"]),
    (["-Wignore::DeprecationWarning", "t.py"], ["-Wignore::DeprecationWarning"], ["t.py"]),
    (["-uB", "t.py"], ["-uB"], ["t.py"]),
    (["-uW", "error", "t.py"], ["-uW", "error"], ["t.py"]),  # -W inside a group takes the next word
    (["-X", "importtime", "-OO", "-m", "pkg.run", "--lr", "1"], ["-X", "importtime", "-OO"], ["-m", "pkg.run", "--lr", "1"]),
    (["-um", "pkg.run"], ["-u"], ["-m", "pkg.run"]),  # -m closes a group, its value the next word
    (["-mpkg.run", "-u"], [], ["-m", "pkg.run", "-u"]),  # the module attached; -u is then the module's
    (["-Ic", "print(1)"], ["-I"], ["-c", "print(1)"]),
    (["--check-hash-based-pycs", "never", "-s", "t.py"], ["--check-hash-based-pycs", "never", "-s"], ["t.py"]),
    (["--check-hash-based-pycs=always", "t.py"], ["--check-hash-based-pycs=always"], ["t.py"]),
    (["-E", "-S", "-q", "-b", "-", "x"], ["-E", "-S", "-q", "-b"], ["-", "x"]),
    (["-u"], ["-u"], []),
    (["--no-such-option", "t.py"], [], []),  # python refuses it: nothing runs
])
def test_pythons_own_grammar_splits_options_from_what_it_runs(argv, options, runs):
    assert python_command(argv) == (options, runs)


def read(tmp_path: Path, text: str, files: dict) -> "object":
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    return extract_script(text, tmp_path, "job.sh", tmp_path)


@pytest.mark.parametrize("options, env, kept_out", [
    (["-uB"], {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}, []),
    (["-OO", "-X", "dev"], {"PYTHONOPTIMIZE": "2", "PYTHONDEVMODE": "1"}, []),
    (["-Wd", "-W", "error::UserWarning"], {"PYTHONWARNINGS": "d,error::UserWarning"}, []),
    (["-Xutf8=0", "-q"], {"PYTHONUTF8": "0"}, ["-q"]),
    (["--check-hash-based-pycs", "never"], {}, ["--check-hash-based-pycs never"]),
    (["-I", "-u"], {}, ["-I", "-u"]),  # isolated mode reads no PYTHON* variable: nothing can stand in
])
def test_each_option_has_the_variable_python_reads_for_it_or_none(options, env, kept_out):
    assert python_option_env(options) == (env, kept_out)


def test_the_reader_takes_an_options_value_for_no_program_and_carries_what_it_may(tmp_path):
    text = ("#!/bin/bash\n#PBS -l select=2:ngpus=4\n#PBS -l walltime=00:30:00\n"
            "mpiexec -n 8 --ppn 4 python3 -X importtime -Wd -m sim.trainer --steps 10\n")
    intent = read(tmp_path, text, {"sim/trainer.py": "import torch\n"})
    assert (intent.entrypoint, intent.script_args) == ("-m sim.trainer", ["--steps", "10"])
    assert intent.env.get("PYTHONPROFILEIMPORTTIME") == "1"
    # PYTHONWARNINGS may import a warning category's module: the values table lets no port set it
    assert "PYTHONWARNINGS" not in intent.env
    [note] = [n for n in intent.notes if PYTHON_OPTIONS_NOTE in n]
    assert "(-X importtime -Wd)" in note and "PYTHONWARNINGS=d not carried" in note


def test_unbuffered_and_optimised_python_is_carried_as_its_variables(tmp_path):
    intent = read(tmp_path, "#!/bin/bash\n#SBATCH -N 1\nsrun python -u -OO fit.py\n", {"fit.py": "import torch\n"})
    assert (intent.entrypoint, intent.env.get("PYTHONUNBUFFERED"), intent.env.get("PYTHONOPTIMIZE")) == ("fit.py", "1", "2")
    assert [n for n in intent.notes if PYTHON_OPTIONS_NOTE in n and "are carried" in n]


def test_a_plain_python_line_has_no_such_note(tmp_path):
    intent = read(tmp_path, "#!/bin/bash\n#SBATCH -N 1\nsrun python fit.py\n", {"fit.py": "import torch\n"})
    assert not [n for n in intent.notes if PYTHON_OPTIONS_NOTE in n]


def test_inline_code_is_no_program(tmp_path):
    intent = read(tmp_path, "#!/bin/bash\n#SBATCH -N 1\nsrun python -uc 'import train; train.main()'\n", {})
    assert intent.entrypoint is None


def test_the_users_entrypoint_skips_pythons_options():
    assert program_line("python3 -u -W ignore main.py --seed 3", None) == ("main.py", ["--seed", "3"])
    assert program_line("python -OO -m tools.eval", None) == ("-m tools.eval", None)


def job(tmp_path: Path, launch: str) -> Path:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "fit.py").write_text("import torch\n")
    path = tmp_path / "job.sbatch"
    path.write_text("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=2\n#SBATCH --gpus-per-node=2\n" + launch + "\n")
    return path


def test_the_trace_reads_the_program_after_pythons_options(tmp_path):
    trace = trace_script(job(tmp_path, "srun python -uW ignore -X faulthandler fit.py --epochs 2"))
    rank = trace.ranks[0]
    assert rank.program == ["fit.py", "--epochs", "2"]
    assert rank.interpreter_options == ["-uW", "ignore", "-X", "faulthandler"]


def test_the_gate_fails_a_port_that_drops_pythons_options_unless_its_header_names_them(tmp_path):
    source = job(tmp_path, "srun python -W error fit.py")
    port = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=2\nsrun python fit.py\n"
    found = compare(trace_script(source), trace_script(source, text=port), header_of(port))
    assert [d.kind for d in found] == ["program"] and "-W error" in found[0].message
    named = f"#!/bin/bash\n# Note: {PYTHON_OPTIONS_NOTE} (-W error): PYTHONWARNINGS=error not carried\n" + port.split("\n", 1)[1]
    assert compare(trace_script(source), trace_script(source, text=named), header_of(named)) == []


def test_the_gate_passes_a_port_that_gives_the_variable_python_reads_for_the_option(tmp_path):
    source = job(tmp_path, "srun python -u -X faulthandler fit.py")
    carried = ("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=2\n"
               "export PYTHONUNBUFFERED=1\nexport PYTHONFAULTHANDLER=1\nsrun python fit.py\n")
    assert compare(trace_script(source), trace_script(source, text=carried), header_of(carried)) == []
    half = carried.replace("export PYTHONFAULTHANDLER=1\n", "")
    assert [d.kind for d in compare(trace_script(source), trace_script(source, text=half), header_of(half))] == ["program"]


def test_a_setuptools_command_before_the_program_is_set_up_not_the_job():
    """`python setup.py install` (or develop, build_ext) packages the checkout; the job is what runs after."""
    from maple_ci.extract import extract

    intent = extract("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gres=gpu:1\ncd ~/proj\npython setup.py install\n"
                     "python -u fit.py cfg.yml\n")
    assert (intent.entrypoint, intent.script_args) == ("fit.py", ["cfg.yml"])
    assert any("setup.py install" in note for note in intent.notes)
