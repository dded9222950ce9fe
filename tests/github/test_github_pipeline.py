"""The pipeline adapter's own rules, without GitHub: which scripts it reads, when verification runs
(once per cluster, never for a fork, per the configured backend), what the debug agent adds."""

import base64
import os
import shutil
import subprocess
from contextlib import nullcontext
from pathlib import Path

import pytest

from maple_ci.errors import MapleError
from maple_ci.github.commands import BotCommand
from maple_ci.github.config import Config
from maple_ci.github.pipeline import Pipeline, git_checkout
from scenarios import run_result

EXAMPLE = Path(__file__).parents[2] / "examples" / "perlmutter_torchrun_ddp.sbatch"
SCRIPT = "#!/bin/bash\n#SBATCH -N 1\n\nsrun python train.py\n"
NCCL_LOG = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1691, unhandled system error\n"
PORT = BotCommand("port", ("perlmutter", "aurora"))


def ported(*paths):
    """Results as `port` hands them over: one source per path, each ported to the cluster in its path."""
    return [{"source": f"jobs/{Path(p).stem}.sh", "intent": {"framework": "pytorch", "strategy": "fsdp"}, "clusters": [
        {"cluster": p.split("/")[1], "path": p, "content": SCRIPT, "template": "t", "checks": [],
         "verification": "pending", "log_url": None, "suggestions": []}]} for p in paths]


def backend_failing_until(fixed, runs, error=None):
    def backend(name, *, cluster, path, script, miniapp, commit, committed, env):
        runs.append((name, path, miniapp, committed))
        if error:
            raise MapleError(error)
        ok = fixed in script
        return run_result(ok, "" if ok else NCCL_LOG, f"https://ci.example/{len(runs)}", "job FAILED")
    return backend


def pipeline(verification, backend, root=Path(".")):
    return Pipeline(Config(verification=verification), lambda ref: nullcontext(root), env={}, backend=backend)


def clusters(results):
    return {c["path"]: c for r in results for c in r["clusters"]}


def test_one_verification_per_cluster_per_request():
    runs = []
    p = pipeline({"default": "slurm"}, backend_failing_until("srun", runs))  # every run passes
    out = clusters(p.verify(PORT, ported("scripts/perlmutter/a.sbatch", "scripts/perlmutter/b.sbatch", "scripts/aurora/a.pbs"), "c0"))
    assert runs == [("slurm", "scripts/perlmutter/a.sbatch", "fsdp", True), ("slurm", "scripts/aurora/a.pbs", "fsdp", True)]
    assert [c["verification"] for c in out.values()] == ["passed", "skipped", "passed"]
    assert "one run per cluster per request; `scripts/perlmutter/a.sbatch` was run" in out["scripts/perlmutter/b.sbatch"]["note"]
    # A nightly `verify` checks every script.
    p.verify(BotCommand("verify"), ported("scripts/perlmutter/a.sbatch", "scripts/perlmutter/b.sbatch"), "c0")
    assert len(runs) == 4


@pytest.mark.parametrize("verification, skip, note", [
    ({"default": "none"}, None, "no verification backend configured for perlmutter"),
    ({"default": "slurm"}, "the PR comes from a fork", "Verification skipped: the PR comes from a fork."),
])
def test_skipped_verification_says_why(verification, skip, note):
    p = pipeline(verification, lambda *a, **k: pytest.fail("nothing may run"))
    [c] = clusters(p.verify(PORT, ported("scripts/perlmutter/a.sbatch"), "c0", skip)).values()
    assert c["verification"] == "skipped" and note in c["note"]


def test_a_backend_that_cannot_run_is_an_error_not_a_failure():
    p = pipeline({"default": "slurm"}, backend_failing_until("x", [], error="sbatch not found on PATH"))
    [c] = clusters(p.verify(PORT, ported("scripts/perlmutter/a.sbatch"), "c0")).values()
    assert c["verification"] == "error" and "could not run on slurm: sbatch not found" in c["note"] and not c["suggestions"]


def test_debug_fix_is_rerun_where_the_backend_can_and_suggested_on_the_failing_lines():
    runs = []
    # The knowledge base's first candidate on Perlmutter: the profile's documented socket interface.
    p = pipeline({"default": "slurm"}, backend_failing_until("NCCL_SOCKET_IFNAME=hsn", runs))
    [c] = clusters(p.verify(PORT, ported("scripts/perlmutter/a.sbatch"), "c0")).values()
    assert (c["verification"], c["log_url"], [r[3] for r in runs]) == ("failed", "https://ci.example/1", [True, False])
    [s] = c["suggestions"]
    assert (s["path"], s["start_line"], s["line"]) == ("scripts/perlmutter/a.sbatch", 3, 3)  # the blank line before srun
    assert s["body"] == "\nexport NCCL_SOCKET_IFNAME=hsn\n" and "NCCL" in s["message"]
    assert "the run passed with the suggested fix" in c["note"]


def test_jacamar_fix_is_suggested_without_a_rerun():
    runs = []
    p = pipeline({"default": "jacamar"}, backend_failing_until("NCCL_DEBUG=INFO", runs))
    [c] = clusters(p.verify(PORT, ported("scripts/perlmutter/a.sbatch"), "c0")).values()
    assert len(runs) == 1 and len(c["suggestions"]) == 1 and "not re-run" in c["note"]


def test_from_must_stay_inside_the_checkout(tmp_path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "secret.sh").write_text(SCRIPT)
    (tmp_path / "repo" / "link.sh").symlink_to(tmp_path / "secret.sh")
    p = pipeline({}, None, tmp_path / "repo")
    for name in ("link.sh", "../secret.sh", "missing.sh"):
        with pytest.raises(MapleError, match="outside the repository or reached through a symlink|No such file"):
            p.port(BotCommand("port", ("aurora",), source=name), (), "c0")


def test_verify_collects_every_ported_script_with_its_static_checks(tmp_path):
    (tmp_path / "scripts" / "perlmutter").mkdir(parents=True)
    shutil.copy(EXAMPLE, tmp_path / "scripts" / "perlmutter" / "train.sbatch")
    (tmp_path / "scripts" / "notacluster").mkdir()
    [result] = pipeline({}, None, tmp_path).port(BotCommand("verify"), (), "c0")
    [c] = result["clusters"]
    assert (result["source"], c["cluster"], c["verification"]) == ("scripts/perlmutter/train.sbatch", "perlmutter", "pending")
    assert c["checks"] and result["intent"]["launcher"] == "torchrun"


def test_a_binary_file_among_the_ported_scripts_is_a_clear_error(tmp_path):
    (tmp_path / "scripts" / "perlmutter").mkdir(parents=True)
    (tmp_path / "scripts" / "perlmutter" / "model.bin").write_bytes(b"\x00\xff" * 100)
    with pytest.raises(MapleError) as error:
        pipeline({}, None, tmp_path).port(BotCommand("verify"), (), "c0")
    # Named as in the repository, not by the runner's checkout path.
    assert str(error.value).startswith("scripts/perlmutter/model.bin looks binary")


def git(cwd, *args, env=None):
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True, env=env).stdout.strip()


@pytest.fixture
def workspace(tmp_path):
    """The Actions workspace (a clone of origin at main) and the head of origin's `feature` branch."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    git(origin, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "base")
    git(tmp_path, "clone", "-q", str(origin), "workspace")
    git(origin, "checkout", "-q", "-b", "feature")
    (origin / "job.sh").write_text(SCRIPT)
    git(origin, "add", "job.sh")
    git(origin, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "job")
    return tmp_path / "workspace", git(origin, "rev-parse", "HEAD")


def test_git_checkout_reads_another_ref_beside_the_workspace(workspace):
    root, head = workspace
    checkout = git_checkout(root)
    with checkout(head) as tree:
        assert (tree / "job.sh").read_text() == SCRIPT and tree != root
    assert not tree.exists() and not (root / "job.sh").exists()
    with checkout("main") as tree:
        assert tree == root  # already there: no second tree


def test_the_fetch_authenticates_with_the_token_in_its_environment_only(workspace, tmp_path, monkeypatch):
    # The workflows check out with persist-credentials: false, so a private repository's fetch
    # needs the token; a `git` first on PATH records what each git process was given.
    root, head = workspace
    token, log, bin_dir = "ghs_secret16charsXYZ", tmp_path / "git.log", tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f"""#!/bin/bash
{{ echo "argv: $*"; env | grep '^GIT_CONFIG_' | sort; }} >> {log}
exec {shutil.which("git")} "$@"
""")
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("GITHUB_TOKEN", token)
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.delenv("GIT_CONFIG_COUNT", raising=False)
    with git_checkout(root)(head) as tree:
        assert (tree / "job.sh").read_text() == SCRIPT
    calls = log.read_text().split("argv: ")[1:]
    header = "AUTHORIZATION: basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()
    [fetch] = [call for call in calls if call.startswith(f"-C {root} fetch")]
    assert fetch.splitlines()[1:] == ["GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.https://github.com/.extraheader",
                                      f"GIT_CONFIG_VALUE_0={header}"]
    assert not any("GIT_CONFIG" in call for call in calls if call is not fetch)  # only the fetch talks to GitHub
    assert token not in "".join(call.splitlines()[0] for call in calls)  # never in argv
    assert token not in (root / ".git" / "config").read_text() and "extraheader" not in (root / ".git" / "config").read_text()
    # git sends that header to GitHub's URLs, and to no other host.
    env = {**os.environ, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.https://github.com/.extraheader",
           "GIT_CONFIG_VALUE_0": header}
    assert git(root, "config", "--get-urlmatch", "http.extraheader", "https://github.com/o/r.git", env=env) == header
    with pytest.raises(subprocess.CalledProcessError):
        git(root, "config", "--get-urlmatch", "http.extraheader", "https://example.com/o/r.git", env=env)


def test_the_configured_model_proposes_the_fix_the_knowledge_base_lacks_and_it_is_not_run():
    """Attack (issue 26 item 2): before, the model's patched script was run again on slurm by
    itself (verify_and_debug with rerun); now it is a suggestion only, and the backend runs once."""
    class Model:  # the llm.Backend interface: a chat in, the model's answer out
        name, max_tokens = "stand-in", 512

        def __init__(self):
            self.asked = []

        def chat(self, messages):
            self.asked.append(messages[-1]["content"])
            return '{"explanation": "train.py reads MYAPP_DATA", "ops": [{"op": "export_env", "name": "MYAPP_DATA", "value": "/data"}]}'

    runs = []

    def backend(name, *, cluster, path, script, miniapp, commit, committed, env):
        runs.append(script)
        ok = "MYAPP_DATA" in script
        return run_result(ok, "" if ok else "0: KeyError: 'MYAPP_DATA'\n", None, "job FAILED")

    model = Model()
    p = Pipeline(Config(verification={"default": "slurm"}), lambda ref: nullcontext(Path(".")), env={}, backend=backend, model=model)
    [c] = clusters(p.verify(PORT, ported("scripts/perlmutter/a.sbatch"), "c0")).values()
    assert len(model.asked) == 1 and "KeyError: 'MYAPP_DATA'" in model.asked[0]
    [s] = c["suggestions"]
    assert "export MYAPP_DATA=/data" in s["body"] and "language model" in s["message"]
    assert len(runs) == 1 and "not run: a language model proposed it" in c["note"] and "fixed" not in c
