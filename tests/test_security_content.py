"""What a launch script's content can make a port or a verification do (issue 10, findings 1-3).

A fork controls the source script; the port is committed by the bot and run at a center under a
real account. Each test here is an attack that used to work, now shown failing."""

import re
from pathlib import Path

import pytest

from maple_ci.errors import MapleError
from maple_ci.port import port
from maple_ci.values import port_env, port_wrapper
from maple_ci.verify.local import verify_local

MINIAPP = str(Path(__file__).parent / "cluster" / "allreduce_miniapp.py")


def _source(tmp_path: Path, marker: Path, body: str = "") -> Path:
    script = tmp_path / "job.sbatch"
    script.write_text(f"""#!/bin/bash
#SBATCH -N 1
#SBATCH --gpus-per-node=4
#SBATCH -t 00:10:00
export BASH_ENV='$(touch {marker})'
export PS4='$(touch {marker}) '
export LD_PRELOAD={tmp_path}/evil.so
export PATH=./bin:$PATH
export PYTHONSTARTUP={tmp_path}/evil.py
export HF_HOME=$SCRATCH/hf
{body}
srun python train.py --epochs 1
""")
    return script


def test_code_running_variables_are_not_carried_into_a_port(tmp_path):
    marker = tmp_path / "marker"
    _, [result] = port(str(_source(tmp_path, marker)), ["polaris"], tmp_path / "out")
    exports = [line for line in result.script.splitlines() if line.startswith("export ")]
    assert not [line for line in exports if line.split()[1].split("=")[0] in
                ("BASH_ENV", "PS4", "LD_PRELOAD", "PATH", "PYTHONSTARTUP")], exports
    assert "export HF_HOME=\"$SCRATCH/hf\"" in exports
    assert "# Note: BASH_ENV, PS4, LD_PRELOAD are not carried over: it makes the shell or the dynamic loader run code" in result.script
    assert "# Note: PATH, PYTHONSTARTUP are not carried over: a port never extends a search path or start-up hook" in result.script


@pytest.mark.cluster
def test_a_ported_script_runs_without_the_sources_bash_env(slurm_cluster, tmp_path, master_port):
    # End to end: the port of the hostile script is run the way the center runs it; the per-rank
    # `bash -c` wrapper and the job shell would both have expanded the carried BASH_ENV.
    marker = tmp_path / "marker"
    _, [result] = port(str(_source(tmp_path, marker)), ["polaris"], tmp_path / "out")
    script = Path(result.path)  # the test cluster's nodes are one machine: a port of its own
    script.write_text(re.sub(r"(?m)^export MASTER_PORT=\d+$", f"export MASTER_PORT={master_port}", result.script))
    run = verify_local(script, miniapp=MINIAPP, timeout=180, env=slurm_cluster.job_env, workdir=tmp_path)
    assert run.ok, run.message + "\n" + run.log
    assert not marker.exists()


# --------------------------------------------------------------------------------------------
# Issue 26 items 5 and 6 (the security review of 2026-11-29, findings P5 and P6)


def _checkout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A checkout with its source script, and a stand-in home outside it holding a ~/.bashrc."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".bashrc").write_text("# the user's own\n")
    (repo / "scripts").mkdir(parents=True)
    source = repo / "train.sbatch"
    source.write_text("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=4\n#SBATCH -t 00:10:00\nsrun python train.py\n")
    return home, repo, source


@pytest.mark.parametrize("planted", ["folder", "file", "output folder"])
def test_maple_port_never_writes_through_a_symlink_the_checkout_holds(tmp_path, monkeypatch, planted):
    """Attack (P5): before, `maple port` wrote through a link git keeps in the checkout: a cluster
    folder linked to ~/.local/bin got the port and its record there, a port linked to ~/.bashrc
    replaced it (mode 0755), and so did a linked output folder (the review's f13). Now each write is
    refused and nothing outside the checkout changes."""
    home, repo, source = _checkout(tmp_path)
    monkeypatch.chdir(repo)
    if planted == "folder":
        (repo / "scripts" / "polaris").symlink_to(home / ".local" / "bin")
    elif planted == "file":
        (repo / "scripts" / "polaris").mkdir()
        (repo / "scripts" / "polaris" / "train.pbs").symlink_to(home / ".bashrc")
    else:
        (repo / "scripts").rmdir()
        (repo / "scripts").symlink_to(home / ".local" / "bin")
    with pytest.raises(MapleError, match="refused to write scripts/polaris/train.pbs"):
        port(str(source), ["polaris"], Path("scripts"))
    assert list((home / ".local" / "bin").iterdir()) == [] and (home / ".bashrc").read_text() == "# the user's own\n"


def test_maple_port_writes_a_real_file_by_a_rename(tmp_path, monkeypatch):
    _, repo, source = _checkout(tmp_path)
    monkeypatch.chdir(repo)
    (repo / "scripts" / "polaris").mkdir()
    (repo / "scripts" / "polaris" / "train.pbs").write_text("an older port\n")
    _, [result] = port(str(source), ["polaris"], Path("scripts"))
    written = repo / "scripts" / "polaris" / "train.pbs"
    assert written.read_text() == result.script and written.stat().st_mode & 0o777 == 0o755
    assert sorted(p.name for p in written.parent.iterdir()) == ["train.pbs", "train.pbs.maple.json"]  # no temporary left


@pytest.mark.parametrize("words, gone", [
    (["nsys", "profile", "-o", "prof", "/tmp/x/wrap.sh"], "/tmp/x/wrap.sh"),
    (["ncu", "--set", "full", "$HOME/w.sh"], "$HOME/w.sh"),
    (["nsys", "profile", "--trace=cuda", "$SCRATCH/w.sh"], "$SCRATCH/w.sh"),
    (["ncu", "--nvtx", "/tmp/w.sh"], "/tmp/w.sh"),
])
def test_a_wrapper_behind_a_profiler_follows_the_wrapper_rule(words, gone):
    """Attack (P6 a): before, every word after nsys/ncu in path form was kept, so
    `srun nsys profile -o prof /tmp/x/wrap.sh python train.py` ran a /tmp wrapper on every rank (the
    review's PWNED_F1_WRAPPER). Now only the checkout's wrappers and the profile's own output stay."""
    kept, notes = port_wrapper(words, "polaris")
    assert gone not in kept and kept[0] == words[0] and f"{gone}` are not kept" in notes[0]
    assert port_wrapper(["nsys", "profile", "-o", "$SCRATCH/prof", "./wrap.sh"], "polaris") == (
        ["nsys", "profile", "-o", "$SCRATCH/prof", "./wrap.sh"], [])


def test_code_caches_are_not_carried_with_a_shared_path():
    """Attack (P6 b): before, TRITON_CACHE_DIR=/tmp/shared and the other code caches were kept as
    data paths, so every rank loaded compiled code (HF_MODULES_CACHE: Python modules) another job or
    the checkout left there. Now they are dropped with a note; the library's own default stands."""
    from maple_ci.values import Target

    caches = {"TORCH_EXTENSIONS_DIR": "$PWD/ext", "TRITON_CACHE_DIR": "/tmp/shared", "TORCHINDUCTOR_CACHE_DIR": "$SCRATCH/i",
              "HF_MODULES_CACHE": "$HOME/modules", "HF_HOME": "$SCRATCH/hf"}
    kept, notes = port_env(caches, Target("polaris", "nvidia", False, 8), set())
    assert kept == {"HF_HOME": "$SCRATCH/hf"}
    assert any(note.startswith("TORCH_EXTENSIONS_DIR, TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR, HF_MODULES_CACHE are not "
                               "carried over: the library loads compiled code") for note in notes), notes
