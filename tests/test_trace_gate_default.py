"""The trace gate of `maple port` is on by default where bubblewrap isolates it (issue 25 B): a port
that runs something else than the source fails, naming it, unless its header names it; the user's own
options are not held against the port; a source that cannot be traced says so rather than passing."""

import json
import subprocess
import sys
from pathlib import Path

from maple_ci.port import PortResult
from maple_ci.trace.compare import gate

SOURCE = ("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=4\n#SBATCH -t 00:30:00\n"
          "module load pytorch\ntorchrun --standalone --nproc_per_node=4 train.py --lr 0.1\n")


def _checkout(tmp_path: Path, text: str = SOURCE) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text("import torch\n")
    path = tmp_path / "job.sbatch"
    path.write_text(text)
    return path


def _port(path: Path, *options: str) -> tuple[int, list]:
    done = subprocess.run([sys.executable, "-m", "maple_ci", "port", str(path), "--to", "polaris", "--json",
                           "--out", str(path.parent / "out"), *options], capture_output=True, text=True)
    checks = [c for r in json.loads(done.stdout)["results"] for c in r["checks"] if c["name"] == "trace"]
    return done.returncode, checks


def test_maple_port_traces_by_default_and_not_with_no_trace(tmp_path):
    path = _checkout(tmp_path)
    code, checks = _port(path)
    assert code == 0 and len(checks) == 1 and checks[0]["ok"]
    assert _port(path, "--no-trace") == (0, [])


def test_the_user_s_own_program_is_not_held_against_the_port(tmp_path):
    path = _checkout(tmp_path)
    (tmp_path / "other.py").write_text("import torch\n")
    code, checks = _port(path, "--entrypoint", "other.py --epochs 2")
    assert code == 0 and checks[0]["ok"], checks


def test_a_source_that_cannot_be_traced_leaves_a_warning_not_a_pass(tmp_path):
    path = _checkout(tmp_path, "#!/bin/bash\n#SBATCH -N 1\nexit 3\nsrun python train.py\n")
    result = PortResult(cluster="perlmutter", status="ok", script="#!/bin/bash\nsrun python train.py\n")
    [checked] = gate(path, [result], trusted=False)
    [trace] = [c for c in checked.checks if c.name == "trace"]
    assert checked.status == "ok" and not trace.ok and trace.severity == "warning"
    assert trace.message.startswith("not traced: the source's trace ended (exit 3)")


def test_without_bubblewrap_the_default_says_it_did_not_trace(tmp_path, monkeypatch, capsys):
    from maple_ci import cli

    monkeypatch.setattr("maple_ci.trace.sandbox.bwrap", lambda: None)
    assert cli._trace_gate(None, json_output=False) is False
    assert "not traced: bubblewrap is not installed" in capsys.readouterr().err
    assert cli._trace_gate(True, json_output=False) is True  # --trace: the user's own script


def test_by_default_a_difference_fails_the_port_naming_it(tmp_path):
    path = _checkout(tmp_path, "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=4\ntorchrun --standalone train.py\n")
    port = "#!/bin/bash\n#SBATCH -N 1\ntorchrun --standalone --nproc_per_node=4 train.py\n"
    [failed] = gate(path, [PortResult(cluster="perlmutter", status="ok", script=port)])
    assert failed.status == "failed" and failed.checks[-1].severity == "error"
    assert "1 processes per node" in failed.checks[-1].message


def test_a_word_the_header_names_from_the_port_s_side_is_named(tmp_path):
    from maple_ci.trace import trace_script
    from maple_ci.trace.compare import compare, header_of

    path = _checkout(tmp_path, "#!/bin/bash\n#SBATCH -N 1\nP='echo --profile'\nsrun python train.py $(eval $P)\n")
    literal = "#!/bin/bash\n# Note: argument '$(eval $P)' is passed as literal text\nsrun python train.py '$(eval $P)'\n"
    assert compare(trace_script(path), trace_script(path, text=literal), header_of(literal)) == []
    # a short or numeric word is not taken as named just because the header holds it somewhere
    number = "#!/bin/bash\n# Note: 1 node\nsrun python train.py 1\n"
    assert [d.kind for d in compare(trace_script(path), trace_script(path, text=number), header_of(number))] == ["program"]


def test_a_site_storage_name_the_source_uses_as_its_own_variable_is_not_a_difference(tmp_path):
    """The trace exports $PROJECT, $DATA... on every allocation, as the centers that set them do; a
    script that reuses such a name for a plain variable (bash keeps an exported name exported) would
    otherwise hand it to its program in the trace only, and fail a port that inlines the value."""
    path = _checkout(tmp_path, SOURCE.replace("torchrun", 'PROJECT=reproducibility\nDATA=/d\ntorchrun')
                     .replace("--lr 0.1", '--lr 0.1 --project "$PROJECT" --data $DATA'))
    code, checks = _port(path)
    assert code == 0 and checks[0]["ok"], checks


def test_a_site_storage_variable_the_port_sets_otherwise_is_a_difference():
    from maple_ci.trace import Rank
    from maple_ci.trace.compare import _env_differences

    def rank(env):
        return Rank(0, 1, "n1", ["python", "train.py"], "/work", [], env, "all")
    assert _env_differences(rank({"PROJECT": "a"}), rank({})) == []
    [found] = _env_differences(rank({"PROJECT": "a"}), rank({"PROJECT": "b"}))
    assert found.message == "the program gets PROJECT='a' in the source and 'b' in the port"
    [found] = _env_differences(rank({"MYPROJ": "a"}), rank({}))
    assert "unset in the port" in found.message


def test_a_python_that_only_prints_its_version_is_not_a_step_the_port_must_run(tmp_path):
    """With no launcher every program the batch shell runs is compared in turn; `python3 --version`
    (python's own option alone, docs.python.org "Command line") runs no program, so a port that does
    not echo the interpreter's version is not a difference."""
    text = ("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gres=gpu:1\n#SBATCH -t 00:10:00\n"
            "echo \"python: $(python3 --version)\"\npython3 --version\npython3 train.py --lr 0.1\n")
    path = _checkout(tmp_path, text)
    code, checks = _port(path)
    assert code == 0 and checks[0]["ok"], checks
