"""Every value a source carries is classified by templates/values.yaml (issue 15 items 1 and 3,
issue 16 items 4-5). Each test ports a source the way a user would (real extraction, real
templates) and reads the script a center would run."""

import json
import re
from pathlib import Path

import pytest

from maple_ci import debug
from maple_ci.containers import allowed
from maple_ci.errors import MapleError
from maple_ci.intent import Container, JobIntent
from maple_ci.library import get_template
from maple_ci.port import port
from maple_ci.profiles import get_profile
from maple_ci.synthesize import render
from maple_ci.values import VERDICTS, Target, env_rule, port_env, port_wrapper, table
from maple_ci.verify.local import verify_local

ALLREDUCE = Path(__file__).parent / "cluster" / "allreduce_miniapp.py"
# The test cluster's mini-app, after rank 0 writes down the variables the program was given.
ENV_MINIAPP = f"""import json, os, runpy
if os.environ.get("PMI_RANK", os.environ.get("RANK", "0")) == "0":
    names = ("HF_HOME", "OMP_NUM_THREADS", "WANDB_MODE", "HOME", "LD_PRELOAD", "GLOO_SOCKET_IFNAME", "PYTHONPATH")
    with open("program-env.json", "w") as out:
        json.dump({{name: os.environ.get(name) for name in names}}, out)
runpy.run_path({str(ALLREDUCE)!r}, run_name="__main__")
"""
HEAD = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --gpus-per-node=4\n#SBATCH -t 00:30:00\n"
DIGEST = "@sha256:" + "0123456789abcdef" * 4


def _port(tmp_path: Path, body: str, target: str = "polaris", launch: str = "srun python train.py --epochs 1"):
    source = tmp_path / "job.sbatch"
    source.write_text(f"{HEAD}{body}\n{launch}\n")
    _, [result] = port(str(source), [target], tmp_path / "out")
    return result.script


def _exports(script: str) -> dict[str, str]:
    return dict(re.findall(r"(?m)^export ([A-Za-z_]\w*)=(.*)$", script))


def _notes(script: str) -> str:
    return "\n".join(line for line in script.splitlines() if line.startswith("# Note: "))


def test_the_table_gives_every_row_a_verdict_a_reason_and_a_known_form():
    rules, values = table()
    assert all(rule.verdict in VERDICTS and len(rule.reason) > 20 for rule in rules)
    assert {"modules", "account", "queue", "constraint", "container_image", "container_binds", "wrapper"} <= set(values)
    assert env_rule("HF_HOME").verdict == "keep" and env_rule("MY_OWN_FLAG") is None
    # No name a row spells out is taken by an earlier row: each row's reason is the one that applies.
    named = [(name, rule) for rule in rules for name in rule.names if not set(name) & set("*?[")]
    assert [name for name, rule in named if env_rule(name) is not rule] == []


def test_a_pattern_names_what_fnmatch_says_it_names():
    """env_rule skips compiling plain names and `PREFIX*` patterns: for every pattern of the table, and
    names built to sit on each side of it, the answer is fnmatchcase's."""
    from fnmatch import fnmatchcase

    from maple_ci.values import _named

    patterns = [p for rule in table()[0] for p in rule.names]
    stems = {p.replace("*", "").replace("?", "") for p in patterns}
    names = stems | {f"{s}X" for s in stems} | {f"X{s}" for s in stems} | {s[:-1] for s in stems} | {"", "NCCL_", "Nccl_X"}
    assert [(n, p) for p in patterns for n in names if _named(n, p) != fnmatchcase(n, p)] == []


# Issue 15's medium findings: each was carried into ports and ran (or redirected) at the center.
FINDINGS = [
    "PYTHONUSERBASE=$PWD/userbase", "CUDA_INJECTION64_PATH=$PWD/inject.so", "OMP_TOOL_LIBRARIES=$PWD/tool.so",
    "SLURM_TASK_PROLOG=$PWD/prolog.sh", "HYDRA_LAUNCHER_EXEC=$PWD/launch.sh", "GCONV_PATH=$PWD/gconv",
    "APPTAINERENV_LD_PRELOAD=$PWD/evil.so", "NCCL_DEBUG_FILE=$HOME/.bashrc", "HF_ENDPOINT=https://evil.example",
    "https_proxy=http://evil.example:3128", "LUA_INIT='os.execute(\"id\")'", "OMPI_MCA_plm_rsh_agent=$PWD/agent.sh",
    "PDSH_SSH_ARGS_APPEND='-o ProxyCommand=evil'", "MODULEPATH=$PWD/modules:$MODULEPATH", "PATH=$PWD/tools:$PATH",
    "PYTHONPATH=$HOME/lib:$PYTHONPATH", "LD_LIBRARY_PATH=$SCRATCH/lib:$LD_LIBRARY_PATH", "LMOD_SETTARG_CMD=$PWD/x.sh",
    "GIT_CONFIG_COUNT=1", "WANDB_API_KEY=secret123", "FI_PROVIDER_PATH=$HOME/prov", "NCCL_NET_PLUGIN=$HOME/net.so",
]


@pytest.mark.parametrize("assignment", FINDINGS)
def test_what_runs_code_or_redirects_the_job_is_dropped_and_named(tmp_path, assignment):
    name, value = assignment.split("=", 1)
    script = _port(tmp_path, f"export {assignment}\nexport HF_HOME=$SCRATCH/hf")
    assert _exports(script)["HF_HOME"] == '"$SCRATCH/hf"'  # a portable value next to it is kept
    # The target's own set-up may export the same name (Polaris' LD_LIBRARY_PATH); never the source's value.
    assert not [line for line in script.splitlines() if line.startswith(f"export {name}=") and value.split(":")[0].strip("'") in line]
    assert re.search(rf"(?m)^# Note: .*\b{name}\b.* not carried over: ", script)
    assert not re.search(r"\$PWD/(tools|modules|userbase)|\$HOME/lib|\$SCRATCH/lib|evil", script.replace(_notes(script), ""))


def test_a_variable_no_row_lists_is_named_not_carried(tmp_path):
    script = _port(tmp_path, "export MY_OWN_FLAG=1\nexport TOKENIZERS_PARALLELISM=false")
    assert "MY_OWN_FLAG" not in _exports(script) and _exports(script)["TOKENIZERS_PARALLELISM"] == "false"
    assert "# Note: not carried over, no row of templates/values.yaml makes them portable: MY_OWN_FLAG;" in script


def test_a_home_prefix_on_the_launch_line_is_not_a_job_wide_export(tmp_path):
    script = _port(tmp_path, "", launch="HOME=/tmp srun python train.py --epochs 1")
    assert "HOME" not in _exports(script)
    assert "HOME is not carried over: the target's login and scheduler set it" in script


@pytest.mark.parametrize("target, threads", [("polaris", "8"), ("frontier", "7"), ("aurora", "4")])
def test_thread_counts_follow_the_targets_cores_per_rank(tmp_path, target, threads):
    script = _port(tmp_path, "export OMP_NUM_THREADS=16\nexport MKL_NUM_THREADS=$SLURM_CPUS_PER_TASK", target)
    assert _exports(script)["OMP_NUM_THREADS"] == threads and _exports(script)["MKL_NUM_THREADS"] == threads
    assert f"# Note: OMP_NUM_THREADS=16 becomes {threads}: threads per rank follow the target's cores per rank" in script


def test_the_source_sites_network_devices_and_paths_are_replaced_or_asked_for(tmp_path):
    body = ("export GLOO_SOCKET_IFNAME=ib0\nexport CUDA_HOME=/opt/site/cuda-12.2\nexport CPU_BIND=list:1-8:9-16:17-24:25-32\n"
            "export CUDA_VISIBLE_DEVICES=0,1,2,3\nexport MIOPEN_FIND_MODE=FAST\n"
            "export HF_DATASETS_CACHE=/eagle/proj/hf\nexport DATA_PATH=/lustre/orion/proj/data\nexport CHECKPOINT_DIR=ckpt/run1")
    script = _port(tmp_path, body, "perlmutter")
    exports = _exports(script)
    assert exports["CHECKPOINT_DIR"] == "ckpt/run1"
    assert not {"GLOO_SOCKET_IFNAME", "CUDA_HOME", "CPU_BIND", "CUDA_VISIBLE_DEVICES", "MIOPEN_FIND_MODE",
                "HF_DATASETS_CACHE", "DATA_PATH"} & set(exports)
    assert "# Note: source settings replaced by perlmutter's: CPU_BIND, CUDA_HOME, CUDA_VISIBLE_DEVICES, GLOO_SOCKET_IFNAME" in script
    assert "/eagle/proj/hf is a path on the source site: set HF_DATASETS_CACHE to your path on perlmutter" in script
    assert "MIOPEN_FIND_MODE is not carried over: MIOpen's settings are AMD's" in script
    # On an AMD machine MIOpen's settings are the program's own: kept.
    assert _exports(_port(tmp_path, body, "frontier"))["MIOPEN_FIND_MODE"] == "FAST"


def test_a_foreign_account_never_lands_in_a_live_directive(tmp_path):
    script = _port(tmp_path, "#SBATCH -A m1234")
    assert "#PBS -A m1234" not in script and "#PBS -A <ACCOUNT>" in script
    assert "account 'm1234' from the source script (its cluster is not known) is not used on polaris" in script
    assert "give yours with --account (in a `/maple port` comment too" in script


def test_profilers_are_kept_without_their_env_and_injection_options(tmp_path):
    script = _port(tmp_path, "", launch="srun nsys profile -e LD_PRELOAD=$PWD/evil.so,BASH_ENV=$PWD/x -o prof python train.py")
    launch = next(line for line in script.splitlines() if "train.py" in line and not line.startswith("#"))
    assert "nsys profile -o prof" in launch and "evil" not in launch and "BASH_ENV" not in launch
    assert "the profiler's option -e is not carried over" in script
    kept, notes = port_wrapper(["ncu", "--injection-path-64", "/x/lib", "--set", "full"], "polaris")
    assert kept == ["ncu", "--set", "full"] and "--injection-path-64" in notes[0]
    kept, notes = port_wrapper(["nsys", "profile", "-o", "/lustre/orion/me/prof"], "polaris")
    assert kept == ["nsys", "profile"] and "output path /lustre/orion/me/prof is on the source site" in notes[0]


@pytest.mark.parametrize("wrapper, kept", [
    (["./wrap.sh"], True), (["bash", "tools/wrap.sh"], True), (["$HOME/bin/wrap.sh"], False),
    (["/opt/site/bin/set_affinity"], False), (["../outside.sh"], False), (["wrap.sh"], False),
])
def test_per_rank_wrappers_are_kept_only_inside_the_checkout_and_named(wrapper, kept):
    words, notes = port_wrapper(wrapper, "polaris")
    assert (words == wrapper) is kept
    assert bool(notes) is not kept and (kept or f"`{' '.join(wrapper)}` is not kept (" in notes[0])


def _container_intent(image: str) -> JobIntent:
    return JobIntent(scheduler="slurm", launcher="srun", nodes=1, gpus_per_node=4, entrypoint="train.py",
                     container=Container("apptainer", image, ["--nv", "-B", "/eagle/proj/data:/data", "-B", "$PWD:/work"]))


def test_a_sources_image_runs_only_when_the_target_allows_it_pinned_by_digest():
    profile, template = get_profile("delta"), get_template("delta-pytorch-ddp")
    tagged = render(_container_intent("docker://nvcr.io/nvidia/pytorch:24.05-py3"), profile, template)
    assert "nvcr.io/nvidia/pytorch" not in tagged.replace(_notes(tagged), "")
    assert "not on delta's list of allowed images pinned by digest" in tagged and "own framework set-up runs it" in tagged
    assert "the source bound /eagle/proj/data at /data in its container" in tagged and "<your path on delta>" in tagged
    assert "$PWD at /work" not in tagged  # the checkout is where the port's job runs anyway
    pinned = f"nvcr.io/nvidia/pytorch{DIGEST}"
    listed = profile.model_copy(update={"container": profile.container.model_copy(update={"allowed_images": [pinned]})})
    assert allowed(f"docker://{pinned}", listed) and not allowed(f"docker://{pinned}", profile)
    assert not allowed("docker://nvcr.io/nvidia/pytorch:24.05-py3", listed.model_copy(update={"container": listed.container.model_copy(
        update={"allowed_images": ["nvcr.io/nvidia/pytorch:24.05-py3"]})}))  # a tag is never enough
    kept = render(_container_intent(f"docker://{pinned}"), listed, template)
    assert f"docker://{pinned}" in kept.replace(_notes(kept), "")
    assert "bind your copy on delta the same way (<your path on delta>:/data)" in kept
    assert "the source's apptainer options are not carried over (--nv -B /eagle/proj/data:/data -B $PWD:/work)" in kept


@pytest.mark.parametrize("name, value, refused", [
    ("LD_PRELOAD", "/tmp/evil.so", True), ("PYTHONPATH", "/tmp/x", True), ("LMOD_SETTARG_CMD", "id", True),
    ("MY_OWN_FLAG", "1", True), ("NCCL_DEBUG", "INFO", False), ("NCCL_SOCKET_IFNAME", "hsn0", False),
    ("SRUN_CPUS_PER_TASK", "$SLURM_CPUS_PER_TASK", False), ("SRUN_TASK_PROLOG", "./p.sh", True),
])
def test_the_debug_agents_edits_pass_the_same_table(name, value, refused):
    op = debug.ExportEnv(op="export_env", name=name, value=value)
    script = "#!/bin/bash\nsrun python train.py\n"
    if refused:
        with pytest.raises(MapleError, match=f"the fix may not export {name}"):
            debug.apply_fix(script, [op])
    else:
        assert f"export {name}={value}" in debug.apply_fix(script, [op])


def test_the_sources_modules_are_named_as_replaced_by_the_targets_set_up(tmp_path):
    script = _port(tmp_path, "module load pytorch/2.3.1 cudatoolkit/12.2")
    assert "# Note: the source's modules (pytorch/2.3.1, cudatoolkit/12.2) are not loaded: module names are the source site's" in script
    assert "module load pytorch/2.3.1" not in script


def test_arguments_naming_the_source_sites_paths_are_kept_and_named(tmp_path):
    launch = "srun python train.py --data /lustre/orion/proj/data --out=/eagle/p/out --tmp /tmp/x --cache $SCRATCH/c"
    script = _port(tmp_path, "", "perlmutter", launch)
    assert "train.py --data /lustre/orion/proj/data --out=/eagle/p/out --tmp /tmp/x" in script  # the program's own
    assert ("# Note: the program's arguments name paths on the source site's file systems, kept as written: "
            "/lustre/orion/proj/data, /eagle/p/out; give your paths on perlmutter") in script


@pytest.mark.cluster
def test_the_program_gets_the_kept_values_and_none_of_the_dropped_ones(slurm_cluster, tmp_path, master_port):
    # End to end on the local Slurm cluster, run the way a center runs a Polaris port.
    body = ("export HF_HOME=$HOME/hf\nexport OMP_NUM_THREADS=16\nexport WANDB_MODE=offline\n"
            f"export LD_PRELOAD={tmp_path}/evil.so\nexport GLOO_SOCKET_IFNAME=ib0\nexport PYTHONPATH=$PWD/tools:$PYTHONPATH")
    script = _port(tmp_path, body, "polaris", "HOME=/tmp srun python train.py --epochs 1")
    path = tmp_path / "port.pbs"
    path.write_text(re.sub(r"(?m)^export MASTER_PORT=\d+$", f"export MASTER_PORT={master_port}", script))
    (tmp_path / "env_miniapp.py").write_text(ENV_MINIAPP)
    run = verify_local(path, miniapp=str(tmp_path / "env_miniapp.py"), timeout=180, env=slurm_cluster.job_env, workdir=tmp_path)
    assert run.ok, run.message + "\n" + run.log
    seen = json.loads((tmp_path / "program-env.json").read_text())
    home = slurm_cluster.job_env.get("HOME")
    assert seen["HF_HOME"] == f"{home}/hf" and seen["OMP_NUM_THREADS"] == "8" and seen["WANDB_MODE"] == "offline"
    assert seen["HOME"] == home and seen["LD_PRELOAD"] is None and seen["GLOO_SOCKET_IFNAME"] is None
    assert "tools" not in (seen["PYTHONPATH"] or "")


def test_a_port_to_the_sources_own_cluster_keeps_its_tuning_but_never_what_loads_code():
    env = {"NCCL_SOCKET_IFNAME": "hsn0", "FI_PROVIDER_PATH": "$HOME/prov", "OMP_NUM_THREADS": "16", "LD_PRELOAD": "x.so"}
    kept, notes = port_env(env, Target("perlmutter", "nvidia", same_cluster=True, cores_per_rank=16), set())
    assert kept == {"NCCL_SOCKET_IFNAME": "hsn0", "OMP_NUM_THREADS": "16"}
    assert any(note.startswith("FI_PROVIDER_PATH is not carried over: it names a directory or plugin") for note in notes)


def test_alcfs_daos_fragment_size_is_an_edit_the_debug_agent_may_make_with_a_count_only():
    from maple_ci.values import edit_refusal
    assert env_rule("DAOS_IOV_FRAG_SIZE").verdict == "keep"
    assert edit_refusal("DAOS_IOV_FRAG_SIZE", "4096") is None
    assert edit_refusal("DAOS_IOV_FRAGMENT", "4096") is not None  # only the row's exact name
