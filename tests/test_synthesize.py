"""Synthesis: every template renders to a script that passes static checks, user values are quoted
and never run while their $VAR expansions still expand, and the port rule (keep nodes, fill each
node) is applied and reported."""

import importlib
import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from maple_ci import schedulers
from maple_ci.errors import MapleError
from maple_ci.extract import extract_script
from maple_ci.intent import JobIntent
from maple_ci.library import get_template, load_templates
from maple_ci.profiles import get_profile, load_profiles
from maple_ci.shell_words import shell_word
from maple_ci.synthesize import output_path, render, resolve_job
from maple_ci.verify.static import checks_ok, static_checks

TEMPLATES = load_templates()
ARGS = ["--epochs", "3", "--lr", "0.1"]


def typical(framework: str = "pytorch", **update) -> JobIntent:
    """A 2-node, 4-GPU-per-node job as the extractor would describe a Perlmutter script."""
    intent = JobIntent(source_cluster="perlmutter", scheduler="slurm", launcher="torchrun", framework=framework,
                       nodes=2, gpus_per_node=4, entrypoint="train.py", script_args=ARGS, account="proj123")
    return replace(intent.with_defaults(), **update)


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t.id)
def test_every_template_renders_a_script_that_passes_static_checks(template):
    profile = get_profile(template.cluster)
    # A single-device template renders a one-GPU job (its shape); the others a 2-node one.
    shape = {"launcher": "python", "strategy": "single", "nodes": 1, "gpus_per_node": 1, "world_size": 1}
    intent = typical(template.framework, **(shape if template.strategy == "single" else {}))
    script = render(intent, profile, template, "jobs/submit_pm.sh")

    checks = static_checks(script, intent, profile)
    assert checks_ok(checks), [c for c in checks if not c.ok]
    assert not [c for c in checks if c.name.startswith("shellcheck:")], "templates must be shellcheck-clean"
    assert script.startswith("#!/bin/bash\n")
    assert template.id in script and profile.docs_url in script
    submit = " ".join(schedulers.get(profile.scheduler).submit)
    assert f"# Submit: {submit} scripts/{profile.name}/submit_pm.{profile.script_suffix}, from the directory" in script
    # The mini-app is substituted for the entrypoint: it must be a plain word with its arguments after it.
    assert re.search(r"(^|\s)train\.py --epochs 3 --lr 0\.1(\s|$)", script, re.M)


HOSTILE_ARGS = ["--name", "two words", "it's", "$(touch {tmp}/pwned-arg)", "`touch {tmp}/pwned-tick`",
                "x; touch {tmp}/pwned-semi", '"double"', "back\\slash", "*",
                # A plain expansion next to, or around, something that would run: all stays literal.
                "$SCRATCH/$(touch {tmp}/pwned-mixed)", "${{SCRATCH:-$(touch {tmp}/pwned-default)}}",
                "${{SCRATCH/x/`touch {tmp}/pwned-pattern`}}", "$((1 + 1))", '"$SCRATCH"', "\\$SCRATCH"]

# Stand-ins for the cluster commands: launchers run the command they wrap once (as a one-task step);
# the programs record the argv and environment they received.
STUB = r'''#!{python}
import json, os, sys
name, args = os.path.basename(sys.argv[0]), sys.argv[1:]
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(json.dumps({{"name": name, "argv": args, "env": os.environ.get("HF_HOME")}}) + "\n")
if name == "scontrol":
    print("node1\nnode2")
elif name == "hostname":
    print("10.0.0.1")
elif name in ("srun", "mpiexec", "mpirun", "ibrun"):
    start = next(i for i, a in enumerate(args) if a in ("bash", "python", "torchrun", "hostname"))
    os.execvp(args[start], args[start:])
'''


@pytest.fixture
def stub_env(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("srun", "mpiexec", "mpirun", "ibrun", "torchrun", "accelerate", "deepspeed", "python",
                 "module", "conda", "scontrol", "hostname"):
        path = bin_dir / name
        path.write_text(STUB.format(python=sys.executable))
        path.chmod(0o755)
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("x1.hostmgmt.example\nx2.hostmgmt.example\n")
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "STUB_LOG": str(tmp_path / "log.jsonl"), "HOME": str(tmp_path),
            "PBS_NODEFILE": str(nodefile), "PBS_O_WORKDIR": str(tmp_path), "SLURM_JOB_NODELIST": "node[1-2]",
            "MAPLE_PYTHON_ENV": str(tmp_path), "SCRATCH": "/x", "USER": "alice",
            "SLURM_NODEID": "0", "SLURM_JOB_NUM_NODES": "2"}


def run_script(script: str, stub_env: dict, cwd: Path) -> list[dict]:
    """Run a generated script with the stand-ins; the calls they logged, in order."""
    run = subprocess.run(["bash", "-c", script], cwd=cwd, env=stub_env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return [json.loads(line) for line in Path(stub_env["STUB_LOG"]).read_text().splitlines()]


def program_call(calls: list[dict]) -> dict:
    """The first call of a program that runs the training code (a launcher or python)."""
    return next(c for c in calls if c["name"] in ("python", "torchrun", "accelerate", "deepspeed"))


LAUNCH_FAMILIES = [
    "perlmutter-pytorch-ddp",  # srun, one task per GPU, program after bash -c '...'
    "perlmutter-accelerate-ddp",  # accelerate launch inside the step
    "polaris-deepspeed-zero3",  # deepspeed launcher, hostfile and .deepspeed_env
    "aurora-pytorch-fsdp",  # PALS mpiexec per tile
    "vista-pytorch-ddp",  # mpirun -> torchrun
    "delta-pytorch-ddp",  # srun -> torchrun with the head node's IP
    "frontier-deepspeed-zero3",  # srun per GCD, generated ds_config
    "sophia-pytorch-ddp",  # Open MPI mpirun, variables forwarded with -x
]


@pytest.mark.parametrize("template_id", LAUNCH_FAMILIES)
def test_user_values_arrive_verbatim_and_never_run(template_id, stub_env, tmp_path):
    template = get_template(template_id)
    args = [a.format(tmp=tmp_path) for a in HOSTILE_ARGS]
    entrypoint = "my dir/train $(touch pwned).py"
    setting = "host ; \"q\" 'q' \\"  # quotes, a separator, a backslash: not a literal word, not carried
    computed = f"$(touch {tmp_path}/pwned-env) `id`"  # a command's output: never carried, the header says so
    intent = typical(template.framework, entrypoint=entrypoint, script_args=args,
                     env={"WANDB_PROJECT": setting, "HF_HOME": computed, "HF_DATASETS_OFFLINE": "1"})
    script = render(intent, get_profile(template.cluster), template, "evil\nrm -rf ~.sh")

    assert "\nrm -rf" not in script  # the source name stays inside its comment
    program = program_call(run_script(script, stub_env, tmp_path))
    assert not list(tmp_path.rglob("pwned*"))
    expected = [entrypoint, *args]
    if template.framework == "deepspeed":
        expected += ["--deepspeed_config", "ds_config.maple.json"]
    start = program["argv"].index(entrypoint)
    assert program["argv"][start:] == expected
    assert program["env"] is None
    assert "export WANDB_PROJECT" not in script and "export HF_HOME" not in script
    assert "# Note: WANDB_PROJECT is not carried over: its value must be a literal word" in script
    assert "# Note: HF_HOME is not carried over: its value must be a path under $HOME" in script
    assert "export HF_DATASETS_OFFLINE=1" in script


@pytest.mark.parametrize("template_id", LAUNCH_FAMILIES)
def test_plain_expansions_still_expand_on_the_target(template_id, stub_env, tmp_path):
    """Extract keeps "$SCRATCH/imagenet" as written (quotes removed); the target's shell expands it."""
    template = get_template(template_id)
    intent = typical(template.framework, entrypoint="$SCRATCH/code/train.py",
                     script_args=["--data-dir", "$SCRATCH/imagenet", "--cache=${HF_HOME:-/scratch/hf}",
                                  "--run", "${USER}-${SLURM_JOB_ID:-local}", "--out", "~/runs/$USER"],
                     env={"HF_HOME": "$SCRATCH/hf/$USER"})
    program = program_call(run_script(render(intent, get_profile(template.cluster), template), stub_env, tmp_path))
    expected = ["/x/code/train.py", "--data-dir", "/x/imagenet", "--cache=/x/hf/alice", "--run", "alice-local",
                "--out", f"{tmp_path}/runs/alice"]
    if template.framework == "deepspeed":
        expected += ["--deepspeed_config", "ds_config.maple.json"]
    start = program["argv"].index("/x/code/train.py")
    assert program["argv"][start:] == expected
    assert program["env"] == "/x/hf/alice"


@pytest.mark.parametrize("value, word", [
    ("$SCRATCH/imagenet", '"$SCRATCH/imagenet"'),
    ("${HF_HOME:-/scratch/hf cache}", '"${HF_HOME:-/scratch/hf cache}"'),
    ("it's $HOME", '"it\'s $HOME"'),
    ("~/data", "~/data"),
    ("plain", "plain"),
    ("$1", '"$1"'),  # the job's own argument, taken as the source took it (the header says so: extract)
    ("--cfg=${10}", '"--cfg=${10}"'),
    ("$HOME$(id)", "'$HOME$(id)'"),
    ("${HOME:-`id`}", "'${HOME:-`id`}'"),
    ("${HOME#/}", "'${HOME#/}'"),
    ("`pwd`/train.py", '"${PWD}/train.py"'),  # pwd prints $PWD: carried as that expansion, nothing run
    ("$(pwd)/cfg $(id)", "'${PWD}/cfg $(id)'"),
])
def test_shell_word_keeps_only_plain_expansions(value, word):
    assert shell_word(value) == word


# How each launcher family takes `python -m pkg.train`, read back by the launcher's own parser.
MODULE_LAUNCHERS = {
    "perlmutter-pytorch-ddp": None,  # python -m
    "perlmutter-pytorch-ddp-torchrun": "torch.distributed.run:get_args_parser",
    "polaris-deepspeed-zero3": "deepspeed.launcher.runner:parse_args",
    "perlmutter-accelerate-fsdp": "accelerate.commands.launch:launch_command_parser",
}


@pytest.mark.parametrize("template_id", MODULE_LAUNCHERS)
def test_module_entrypoint_runs_as_a_module(template_id, stub_env, tmp_path):
    template = get_template(template_id)
    intent = typical(template.framework, entrypoint="-m pkg.train")
    program = program_call(run_script(render(intent, get_profile(template.cluster), template), stub_env, tmp_path))
    argv = program["argv"][1:] if program["name"] == "accelerate" else program["argv"]  # after `launch`
    if MODULE_LAUNCHERS[template_id] is None:
        assert argv[:2 + len(ARGS)] == ["-m", "pkg.train", *ARGS]
        return
    module, name = MODULE_LAUNCHERS[template_id].split(":")
    parser = getattr(importlib.import_module(module), name)
    parsed = parser().parse_args(argv) if name.endswith("parser") else parser(argv)
    script, script_args = (parsed.user_script, parsed.user_args) if hasattr(parsed, "user_script") else \
        (parsed.training_script, parsed.training_script_args)
    assert (parsed.module, script, script_args[:len(ARGS)]) == (True, "pkg.train", ARGS)


def test_accelerate_fsdp_and_zero3_set_their_mode_and_keep_a_given_config():
    profile = get_profile("perlmutter")
    fsdp, zero3 = get_template("perlmutter-accelerate-fsdp"), get_template("perlmutter-accelerate-zero3")
    script = render(typical("accelerate"), profile, fsdp)
    assert '--use_fsdp --fsdp_auto_wrap_policy=SIZE_BASED_WRAP --num_machines="$NNODES"' in script
    assert "--multi_gpu" not in script  # accelerate refuses --multi_gpu together with --use_fsdp
    # The source's accelerate config keeps its own FSDP settings: only the mode is named.
    given = render(typical("accelerate", configs={"accelerate": "fsdp.yaml"}), profile, fsdp)
    assert "--config_file fsdp.yaml --use_fsdp --num_machines" in given
    script = render(typical("accelerate"), profile, zero3)
    assert "--use_deepspeed --deepspeed_multinode_launcher=standard --zero_stage=3 --num_machines" in script
    given = render(typical("accelerate", configs={"deepspeed": "$SCRATCH/ds.json"}), profile, zero3)
    assert '--deepspeed_config_file="$SCRATCH/ds.json" --num_machines' in given and "--zero_stage" not in given
    # The strategy is read back from the generated launch line.
    assert extract_script(script).strategy == "zero3"
    assert extract_script(render(typical("accelerate"), profile, fsdp)).strategy == "fsdp"


@pytest.mark.parametrize("template_id, exports", [
    ("frontier-accelerate-fsdp", "export ACCELERATE_USE_FSDP=true FSDP_AUTO_WRAP_POLICY=SIZE_BASED_WRAP"),
    ("aurora-accelerate-zero3", "export ACCELERATE_USE_DEEPSPEED=true ACCELERATE_DEEPSPEED_ZERO_STAGE=3"),
])
def test_accelerate_without_its_launcher_gets_the_mode_from_the_environment(template_id, exports):
    """Where ranks start one per device (no accelerate launch), Accelerator() reads these variables."""
    template = get_template(template_id)
    script = render(typical("accelerate"), get_profile(template.cluster), template)
    assert exports in script and "accelerate launch" not in script


def test_profile_prologue_runs_before_any_module_command():
    sophia = render(typical(), get_profile("sophia"), get_template("sophia-pytorch-ddp"))
    (prologue,) = get_profile("sophia").prologue
    assert sophia.count("/etc/profile") == 1  # the profile's line, not a template's copy
    assert sophia.index(prologue) < sophia.index("module ")
    # Any cluster's profile can have one, and it runs before that cluster's software set-up.
    profile = get_profile("perlmutter").model_copy(update={"prologue": ["source /opt/site/init.sh"]})
    script = render(typical(), profile, get_template("perlmutter-pytorch-ddp"))
    assert script.index("source /opt/site/init.sh\n") < script.index("module load pytorch")


def test_submit_line_names_the_script_where_it_is_written():
    script = render(typical(), get_profile("polaris"), get_template("polaris-pytorch-ddp"), "jobs/run.sh",
                    out_dir=Path("ported"))
    assert "# Submit: qsub ported/polaris/run.pbs, from the directory the source was submitted from" in script


def test_deepspeed_without_config_gets_a_zero3_config_written_by_the_script():
    template = get_template("perlmutter-deepspeed-zero3")
    script = render(typical("deepspeed"), get_profile("perlmutter"), template)
    config = json.loads(script.split("<<'JSON'\n", 1)[1].split("\nJSON\n", 1)[0])
    assert config["zero_optimization"]["stage"] == 3
    assert '--deepspeed_config "$DS_CONFIG"' in script


def test_deepspeed_config_from_the_source_is_passed_and_not_duplicated():
    template, profile = get_template("delta-deepspeed-zero3"), get_profile("delta")
    given = render(typical("deepspeed", configs={"deepspeed": "cfg/ds z3.json"}), profile, template)
    assert "DS_CONFIG='cfg/ds z3.json'" in given and "<<'JSON'" not in given
    in_args = render(typical("deepspeed", script_args=["--deepspeed_config", "mine.json"]), profile, template)
    assert in_args.count("--deepspeed_config") == 1 and "DS_CONFIG" not in in_args


def test_accelerate_config_file_is_passed():
    script = render(typical("accelerate", configs={"accelerate": "acc.yaml"}), get_profile("anvil"),
                    get_template("anvil-accelerate-ddp"))
    assert "--config_file acc.yaml" in script and "--num_processes=$((NNODES * 4))" in script


def test_port_keeps_nodes_fills_each_node_and_says_when_world_size_changes():
    aurora = get_profile("aurora")
    script = render(typical(), aurora, get_template("aurora-pytorch-ddp"))
    assert "mpiexec --envall -n $((NNODES * 12)) --ppn 12" in script
    assert "#PBS -l select=2\n" in script
    assert "world size changes from 8 to 24" in script
    assert "# Job: 2 node(s) x 12 ranks = 24 ranks" in script
    # An account from another center never lands in a live directive: the port asks for the user's.
    assert "#PBS -A proj123" not in script and "#PBS -A <ACCOUNT>" in script
    assert "# Note: account 'proj123' from the perlmutter script is not used on aurora (an account belongs" in script
    # One the user gave (--account, on the command line or in a /maple port comment) is theirs on every target.
    given = render(typical(account="myproj", account_given=True), aurora, get_template("aurora-pytorch-ddp"))
    assert "#PBS -A myproj" in given and "is not used on aurora" not in given
    same = render(typical(), get_profile("polaris"), get_template("polaris-pytorch-ddp"))
    assert "world size" not in same and "-n $((NNODES * 4)) --ppn 4" in same


def test_walltime_and_queue_resolution():
    perlmutter, template = get_profile("perlmutter"), get_template("perlmutter-pytorch-ddp")
    job = resolve_job(typical(), perlmutter, template)
    assert (job.queue.name, job.walltime) == ("regular", "01:00:00")
    assert "no walltime" in " ".join(job.notes)
    short = resolve_job(typical(queue="debug", walltime="00:20:00"), perlmutter, template)
    assert (short.queue.name, short.walltime) == ("debug", "00:20:00")
    # The source's queue is not used where the job does not fit it.
    big = resolve_job(typical(queue="debug", nodes=16), perlmutter, template)
    assert big.queue.name == "regular" and "'debug'" in " ".join(big.notes)
    # Without a walltime, the default never exceeds the queue's limit (Polaris debug-scaling: 1 h).
    assert resolve_job(typical(), get_profile("polaris"), get_template("polaris-pytorch-ddp")).walltime == "01:00:00"


def test_site_network_settings_are_replaced_and_user_settings_kept():
    env = {"NCCL_SOCKET_IFNAME": "ib0", "FI_PROVIDER": "efa", "HF_HOME": "$SCRATCH/hf", "NCCL_DEBUG": "INFO"}
    profile, template = get_profile("perlmutter"), get_template("perlmutter-pytorch-ddp")
    script = render(typical(source_cluster=None, env=env), profile, template)
    assert "export NCCL_SOCKET_IFNAME=hsn" in script and "=ib0" not in script and "export FI_PROVIDER" not in script
    assert "# Note: source settings replaced by perlmutter's: FI_PROVIDER, NCCL_SOCKET_IFNAME" in script
    assert 'export HF_HOME="$SCRATCH/hf"' in script and "export NCCL_DEBUG=INFO" in script
    # A port to the source's own cluster keeps the center's own tuning and paths (issue 16 item 6).
    same = render(typical(env={**env, "FI_PROVIDER": "cxi", "HF_HOME": "/pscratch/sd/a/hf"}), profile, template)
    assert "export FI_PROVIDER=cxi" in same and "export HF_HOME=/pscratch/sd/a/hf" in same


def test_account_placeholder_when_missing_and_refusal_of_unsafe_directive_values():
    profile, template = get_profile("perlmutter"), get_template("perlmutter-pytorch-ddp")
    script = render(typical(account=None), profile, template)
    assert "#SBATCH --account=<ACCOUNT>" in script and profile.account_example in script
    with pytest.raises(MapleError, match="directive"):
        render(typical(account="m1234 --qos=premium"), profile, template)
    # Where an account is optional (TACC) none is written.
    assert "--account" not in render(typical(account=None), get_profile("vista"), get_template("vista-pytorch-ddp"))


def test_invalid_environment_name_is_not_carried():
    script = render(typical(env={"A=$(id)": "1"}), get_profile("perlmutter"), get_template("perlmutter-pytorch-ddp"))
    assert "# Note: 'A=$(id)' is not carried over: it is not a valid shell variable name" in script
    assert "export A" not in script


def test_unsupported_template_refuses_with_its_reason():
    template = get_template("vista-deepspeed-zero3").model_copy(
        update={"supported": False, "reason": "no aarch64 DeepSpeed build on this stack"})
    with pytest.raises(MapleError, match="no aarch64 DeepSpeed build on this stack"):
        render(typical("deepspeed"), get_profile("vista"), template)


def test_only_a_missing_entrypoint_refuses_and_the_refusal_names_its_option():
    template, profile = get_template("perlmutter-pytorch-ddp"), get_profile("perlmutter")
    with pytest.raises(MapleError, match="cannot port without entrypoint .*give the entrypoint with --entrypoint"):
        render(typical(nodes=None, entrypoint=None), profile, template)
    # A size left to submit time or an unknown GPU count has a default: the target's devices.
    script = render(typical(nodes=None, gpus_per_node=None, world_size=None, missing=["gpus_per_node"]), profile, template)
    assert "#SBATCH --nodes=1\n" in script and "#SBATCH --ntasks-per-node=4\n" in script


def test_template_for_another_cluster_is_refused():
    with pytest.raises(MapleError, match="not polaris"):
        render(typical(), get_profile("polaris"), get_template("perlmutter-pytorch-ddp"))


def test_output_path():
    out = Path("scripts")
    assert output_path(out, get_profile("perlmutter"), "jobs/submit_pm.sh") == out / "perlmutter" / "submit_pm.sbatch"
    assert output_path(out, get_profile("polaris"), "train job.sh") == out / "polaris" / "train-job.pbs"
    assert output_path(out, get_profile("aurora"), "<text>") == out / "aurora" / "text.pbs"
    assert output_path(out, get_profile("aurora"), "../../etc/x.sh") == out / "aurora" / "x.pbs"
