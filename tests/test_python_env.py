"""Issue 16, cause 4: where a center provides no PyTorch environment, a port activates the user's
(--python-env) or the job stops at once; it never runs on without torch. Before, Frontier, Lonestar6
and Stampede3 read an undocumented MAPLE_PYTHON_ENV at submit time and went on without it, and
Anvil and Bridges-2 loaded no PyTorch at all. Also: the header note for a program that moves to
another GPU vendor (vendors.py).
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from venvs import nested_venv

from maple_ci.cli import main
from maple_ci.errors import MapleError
from maple_ci.extract import extract
from maple_ci.port import port_intent
from maple_ci.profiles import load_profiles
from maple_ci.python_env import parse_python_envs
from maple_ci.verify.slurm import verify_slurm

NO_PYTORCH = ["anvil", "bridges2", "frontier", "lonestar6", "stampede3"]  # the centers' docs, see each profile
ONE_GPU = ("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus=1\n#SBATCH -t 00:20:00\n#SBATCH -A acct\n"
           "python3 train.py --lr 0.1\n")
DDP = ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n#SBATCH -t 00:20:00\n"
       "srun python train.py\n")
REPO = Path(__file__).resolve().parents[1]


def ported(cluster: str, tmp_path: Path, envs=None, text: str = DDP, source_cluster=None) -> str:
    intent = extract(text, "job.sh")
    if source_cluster:
        intent = intent.__class__(**{**intent.__dict__, "source_cluster": source_cluster})
    [result] = port_intent(intent, [cluster], "job.sh", tmp_path, python_envs=envs or {})
    assert result.script, result  # written; its checks are other tests' business
    return result.script


def software(script: str) -> str:
    """The lines between `set -eo pipefail` and the launch: where the environment is set up."""
    return script[script.index("set -eo pipefail"): script.index("export MASTER_PORT=")]


@pytest.mark.parametrize("cluster", NO_PYTORCH)
def test_without_an_environment_the_job_stops_before_the_program(cluster, tmp_path):
    script = ported(cluster, tmp_path)
    stop = re.search(r"^echo '(maple-ci: .*provides no PyTorch environment.*--python-env PATH.*)' >&2; exit 1$",
                     software(script), re.M)
    assert stop, software(script)
    assert re.search(rf"^# Note: {cluster} provides no PyTorch environment: port again with --python-env", script, re.M)
    assert "MAPLE_PYTHON_ENV" not in script


@pytest.mark.parametrize("cluster", NO_PYTORCH)
def test_the_users_environment_is_activated_and_the_job_goes_on(cluster, tmp_path):
    script = ported(cluster, tmp_path, {"default": "$SCRATCH/envs/torch"})
    kind = load_profiles()[cluster].frameworks["pytorch"].user_env
    line = ('conda activate "$SCRATCH/envs/torch"' if kind == "conda"
            else 'source "$SCRATCH/envs/torch/bin/activate"')
    assert re.search(rf"^{re.escape(line)}$", software(script), re.M)
    assert "exit 1" not in script
    assert "the job activates yours, $SCRATCH/envs/torch" in script


CONTAINER = ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n#SBATCH -t 00:20:00\n"
             "srun apptainer exec --nv pytorch_24.06.sif python train.py\n")


@pytest.mark.parametrize("cluster", NO_PYTORCH)
def test_a_source_image_the_target_does_not_allow_still_asks_for_the_environment(cluster, tmp_path):
    # The image is not carried (not on the site's allowlist pinned by digest), so the site's set-up
    # runs the program: the header must ask for --python-env, as it does without a container.
    script = ported(cluster, tmp_path, text=CONTAINER)
    assert "not used here" in script
    assert re.search(rf"^# Note: {cluster} provides no PyTorch environment: port again with --python-env", script, re.M)


def test_a_cluster_named_environment_applies_to_that_target_only(tmp_path):
    envs = parse_python_envs(["frontier=/ccs/proj/abc/torch", "/scratch/me/venv"])
    assert envs == {"frontier": "/ccs/proj/abc/torch", "default": "/scratch/me/venv"}
    assert "conda activate /ccs/proj/abc/torch" in ported("frontier", tmp_path, envs)
    assert "source /scratch/me/venv/bin/activate" in ported("lonestar6", tmp_path, envs)


def test_a_center_with_its_own_pytorch_ignores_the_option(tmp_path):
    without, given = ported("perlmutter", tmp_path), ported("perlmutter", tmp_path / "b", {"default": "/x/env"})
    assert "/x/env" not in given and "exit 1" not in given
    assert software(without) == software(given)


def test_no_profile_reads_maple_python_env():
    text = "".join(p.read_text() for p in (REPO / "templates" / "clusters").glob("*.yaml"))
    assert "MAPLE_PYTHON_ENV" not in text


@pytest.mark.parametrize("value", ["$(touch /tmp/x)", "env; rm -rf ~", "a b", "../../etc", "`id`", ""])
def test_an_environment_path_that_is_not_a_plain_path_is_refused(value):
    with pytest.raises(MapleError, match="--python-env"):
        parse_python_envs([value])


def test_a_misspelt_cluster_in_the_option_is_an_error(tmp_path):
    with pytest.raises(MapleError, match="unknown cluster 'frontiier'"):
        port_intent(extract(DDP, "job.sh"), ["frontier"], "job.sh", tmp_path, python_envs={"frontiier": "/x"})


def test_the_cli_option_reaches_the_script_and_bad_input_exits_2(capsys, monkeypatch, tmp_path):
    source = tmp_path / "job.sh"
    source.write_text(DDP)
    monkeypatch.setattr("sys.argv", ["maple", "port", str(source), "--to", "anvil", "--out", str(tmp_path / "out"),
                                     "--python-env", "anvil=$HOME/.conda/envs/torch"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 0
    assert 'conda activate "$HOME/.conda/envs/torch"' in (tmp_path / "out" / "anvil" / "job.sbatch").read_text()
    bad = subprocess.run([sys.executable, "-m", "maple_ci", "port", str(source), "--to", "anvil", "--out",
                          str(tmp_path / "bad"), "--python-env", "$(id)"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--python-env" in bad.stderr and not (tmp_path / "bad").exists()


@pytest.mark.cluster
def test_on_a_real_cluster_the_job_stops_without_the_environment_and_runs_with_it(slurm_cluster, tmp_path, master_port):
    """Anvil's port on the local Slurm cluster: without --python-env the job fails with the message and
    the program never starts; with a real venv over the tests' own torch (venvs.nested_venv) it runs."""
    venv = tmp_path / "venv"
    nested_venv(venv)
    for name, envs in (("none", {}), ("venv", {"default": str(venv)})):
        lonestar = ported("lonestar6", tmp_path / name, envs, ONE_GPU)  # venv kind; the batch shell runs python
        path = tmp_path / f"{name}.sbatch"
        (tmp_path / name).mkdir(exist_ok=True)
        path.write_text(lonestar.replace("export MASTER_PORT=29500", f"export MASTER_PORT={master_port}"))
        result = verify_slurm(path, miniapp="ddp", timeout=600, env=slurm_cluster.job_env, workdir=tmp_path / name)
        if envs:
            assert result.ok and result.result["world_size"] == 1, result.log[-3000:]
        else:
            assert not result.ok and result.result is None, result.log[-3000:]
            assert "provides no PyTorch environment" in result.log and "--python-env PATH" in result.log


def test_a_cuda_program_ported_to_aurora_is_told_to_use_xpu_and_xccl(tmp_path):
    script = ported("aurora", tmp_path, source_cluster="perlmutter")
    note = next(line for line in script.splitlines() if "written for perlmutter's NVIDIA CUDA GPUs" in line)
    assert "torch.xpu" in note and "'xccl'" in note


def test_a_cuda_program_ported_to_frontier_is_told_what_rocm_keeps_and_what_it_does_not(tmp_path):
    script = ported("frontier", tmp_path, {"default": "/e"}, source_cluster="polaris")
    note = next(line for line in script.splitlines() if "AMD ROCm" in line)
    assert "keeps torch.cuda" in note and "ROCm builds" in note


def test_an_xpu_program_ported_to_nvidia_is_told_to_use_cuda_and_nccl(tmp_path):
    note = next(line for line in ported("polaris", tmp_path, source_cluster="aurora").splitlines() if "Intel XPU" in line)
    assert "torch.cuda" in note and "'nccl'" in note and "intel_extension_for_pytorch" in note


@pytest.mark.parametrize("source", ["perlmutter", None])  # same vendor; source machine unknown
def test_no_vendor_note_when_the_vendor_stays_or_is_not_known(tmp_path, source):
    assert "GPUs and polaris has" not in ported("polaris", tmp_path, source_cluster=source)


# --- the bot: .github/maple.yml `python_env` ---

def test_the_repository_config_names_environments_and_the_bot_uses_them(tmp_path):
    from contextlib import nullcontext

    from maple_ci.github.commands import BotCommand
    from maple_ci.github.config import load_config
    from maple_ci.github.pipeline import Pipeline

    (tmp_path / "maple.yml").write_text("python_env:\n  frontier: /ccs/proj/abc/envs/torch\n")
    config = load_config(tmp_path / "maple.yml", load_profiles())
    assert config.python_env == {"frontier": "/ccs/proj/abc/envs/torch"}
    (tmp_path / "job.sh").write_text(DDP)
    pipeline = Pipeline(config, lambda ref: nullcontext(tmp_path), env={}, backend=None)
    [result] = pipeline.port(BotCommand("port", ("frontier", "anvil"), source="job.sh"), (), "c0")
    scripts = {c["cluster"]: c["content"] for c in result["clusters"]}
    assert "conda activate /ccs/proj/abc/envs/torch" in scripts["frontier"]
    assert "--python-env PATH" in scripts["anvil"] and "exit 1" in scripts["anvil"]  # not named for anvil


@pytest.mark.parametrize("text, problem", [("python_env:\n  frontier: $(id)\n", "`python_env`: Value error, --python-env '$(id)'"),
                                           ("python_env:\n  frontiier: /x\n", "unknown cluster")])
def test_a_bad_config_environment_is_named(tmp_path, text, problem):
    from maple_ci.github.config import load_config

    (tmp_path / "maple.yml").write_text(text)
    with pytest.raises(MapleError, match=re.escape(problem)):
        load_config(tmp_path / "maple.yml", load_profiles())
