"""Static checks: each policy failure is found, is an error (or a warning where the script can still
run) and points at the line to fix."""

import re
from dataclasses import replace
from pathlib import Path

import pytest

from maple_ci.errors import MapleError
from maple_ci.intent import JobIntent
from maple_ci.library import get_template
from maple_ci.profiles import get_profile
from maple_ci.synthesize import render
from maple_ci import schedulers
from maple_ci.verify.static import checks_ok, static_checks
from maple_ci.verify.substitute import substitute_entrypoint

INTENT = JobIntent(nodes=2, gpus_per_node=4, entrypoint="train.py", script_args=["--lr", "0.1"],
                   account="m1234_g", account_given=True).with_defaults()


def script_for(template_id: str, intent: JobIntent = INTENT) -> str:
    template = get_template(template_id)
    return render(replace(intent, framework=template.framework), get_profile(template.cluster), template)


def line_of(script: str, text: str) -> int:
    return next(n for n, line in enumerate(script.splitlines(), start=1) if text in line)


def failures(script: str, cluster: str) -> dict[str, object]:
    checks = static_checks(script, INTENT, get_profile(cluster))
    return {c.name: c for c in checks if not c.ok}


def test_clean_port_passes_with_every_policy_checked():
    script = script_for("perlmutter-pytorch-ddp")
    checks = static_checks(script, INTENT, get_profile("perlmutter"))
    assert checks_ok(checks) and all(c.ok for c in checks)
    names = {c.name for c in checks}
    assert {"bash-syntax", "shellcheck", "queue", "nodes", "walltime", "gpus-per-node", "account",
            "required:--constraint=gpu", "entrypoint", "world-size"} <= names


@pytest.mark.parametrize("old, new, check, message, at", [
    ("--gpus-per-node=4", "--gpus-per-node=8", "gpus-per-node", "8 GPUs per node requested but NERSC Perlmutter nodes have 4", "--gpus-per-node"),
    ("--time=01:00:00", "--time=2-01:00:00", "walltime", "exceeds queue regular's limit of 48:00:00", "--time"),
    ("--qos=regular", "--qos=gold", "queue", "qos 'gold' does not exist on NERSC Perlmutter", "--qos"),
    ("--qos=regular", "--qos=debug", "walltime", "exceeds queue debug's limit of 00:30:00", "--time"),
    ("--nodes=2", "--nodes=2000", "nodes", "2000 nodes is outside queue regular's limit of 1-1536 nodes", "--nodes"),
])
def test_policy_failures_point_at_their_directive(old, new, check, message, at):
    script = script_for("perlmutter-pytorch-ddp").replace(old, new)
    found = failures(script, "perlmutter")
    assert check in found and message in found[check].message
    assert found[check].severity == "error" and found[check].line == line_of(script, "#SBATCH " + at)


def test_walltime_limit_depends_on_job_size_in_binned_queues():
    # Polaris prod routes 10-24 node jobs to `small`, 3 h. A port caps the walltime itself; a
    # script edited by hand afterwards is what the check is for.
    intent = replace(INTENT, nodes=12, walltime="05:00:00")
    script = script_for("polaris-pytorch-ddp", intent)
    assert "#PBS -l walltime=03:00:00" in script and "limit of 03:00:00: checkpoint" in script
    script = re.sub(r"(?m)^#PBS -q .*$", "#PBS -q prod", script.replace("walltime=03:00:00", "walltime=05:00:00"))
    found = failures(script, "polaris")
    assert "limit of 03:00:00 for 12 nodes" in found["walltime"].message
    assert found["walltime"].line == line_of(script, "walltime=05:00:00")


def test_missing_required_directive():
    script = script_for("polaris-pytorch-ddp").replace("#PBS -l filesystems=home:eagle\n", "")
    found = failures(script, "polaris")
    assert "requires the directive -l filesystems=home:eagle" in found["required:-l filesystems=home:eagle"].message


def test_rejected_directive_on_vista():
    script = script_for("vista-pytorch-ddp").replace("#SBATCH --nodes=2\n", "#SBATCH --nodes=2\n#SBATCH --gres=gpu:1\n")
    found = failures(script, "vista")
    assert found["rejected:--gres"].line == line_of(script, "--gres=gpu:1")
    assert "TACC Vista refuses jobs that use --gres" in found["rejected:--gres"].message


@pytest.mark.parametrize("template_id, old, new, message", [
    ("perlmutter-pytorch-ddp-torchrun", '--nnodes="$NNODES"', "--nnodes=3", "starts 12 ranks but the directives give 2 nodes x 4 = 8"),
    ("perlmutter-pytorch-fsdp", "--nproc_per_node=4", "--nproc_per_node=2", "starts 4 ranks but the directives give 2 nodes x 4 = 8"),
    ("polaris-pytorch-ddp-torchrun", "--nproc_per_node=4", "--nproc_per_node=8", "8 ranks per node but ALCF Polaris nodes have 4"),
    ("lonestar6-pytorch-ddp", "--nproc_per_node=3", "--nproc_per_node=4", "4 ranks per node but TACC Lonestar6 nodes have 3"),
])
def test_world_size_mismatch_between_directives_and_launcher(template_id, old, new, message):
    script = script_for(template_id)
    assert old in script
    script = script.replace(old, new)
    check = failures(script, get_template(template_id).cluster)["world-size"]
    assert message in check.message and check.severity == "error"
    assert check.line is not None


def test_bash_syntax_error_reports_its_line():
    lines = script_for("perlmutter-pytorch-ddp").splitlines()
    at = lines.index("set -eo pipefail") + 2
    lines.insert(at - 1, "fi")
    script = "\n".join(lines) + "\n"
    check = failures(script, "perlmutter")["bash-syntax"]
    assert check.line == at and "unexpected token" in check.message


def test_shellcheck_findings_are_warnings_with_lines():
    script = script_for("perlmutter-pytorch-ddp").replace("set -eo pipefail\n", 'set -eo pipefail\necho "$run_dir"\n')
    checks = static_checks(script, INTENT, get_profile("perlmutter"))
    finding = next(c for c in checks if c.name == "shellcheck:SC2154")
    assert finding.severity == "warning" and finding.line == line_of(script, "$run_dir")
    assert checks_ok(checks)


def test_placeholder_account_warns_and_missing_account_fails():
    script = script_for("perlmutter-pytorch-ddp", replace(INTENT, account=None))
    checks = static_checks(script, INTENT, get_profile("perlmutter"))
    account = next(c for c in checks if c.name == "account")
    assert not account.ok and account.severity == "warning" and "m1234_g" in account.message
    assert checks_ok(checks)
    gone = script.replace("#SBATCH --account=<ACCOUNT>\n", "")
    assert failures(gone, "perlmutter")["account"].severity == "error"


def test_entrypoint_must_be_run():
    script = script_for("perlmutter-pytorch-ddp").replace("python train.py", "python other.py")
    assert "runs train.py on 0 launch lines" in failures(script, "perlmutter")["entrypoint"].message


@pytest.mark.parametrize("template_id, entrypoint, written", [
    ("perlmutter-pytorch-ddp", "-m pkg.train", "python -m pkg.train"),
    ("perlmutter-pytorch-fsdp", "-m pkg.train", "--module pkg.train"),
    ("perlmutter-pytorch-ddp", "$SCRATCH/code/train.py", 'python "$SCRATCH/code/train.py"'),
])
def test_entrypoint_is_found_as_synthesize_writes_it(template_id, entrypoint, written):
    intent = replace(INTENT, entrypoint=entrypoint)
    script = script_for(template_id, intent)
    check = next(c for c in static_checks(script, intent, get_profile("perlmutter")) if c.name == "entrypoint")
    assert check.ok and check.line == line_of(script, written)
    # A module is run only with the module flag: the bare name is some other word.
    if entrypoint.startswith("-m "):
        bare = script.replace(written, "python pkg.train")
        assert not next(c for c in static_checks(bare, intent, get_profile("perlmutter")) if c.name == "entrypoint").ok


def test_the_entrypoint_check_finds_the_program_the_verifier_swaps():
    # One reader for both: the check passes exactly when the substitution finds one launch line.
    script = script_for("perlmutter-pytorch-ddp")
    assert substitute_entrypoint(script, Path("/m/app.py"), "train.py") != script
    direct = script.replace("python train.py", "./train.py")  # run as an executable: python runs the mini-app
    assert "maple-rank \\\n    python /m/app.py\n" in substitute_entrypoint(direct, Path("/m/app.py"), "train.py")
    twice = script + "srun python train.py --epochs 1\n"
    with pytest.raises(MapleError, match="2 launch lines running 'train.py'"):
        substitute_entrypoint(twice, Path("/m/app.py"), "train.py")
    assert "runs train.py on 2 launch lines" in failures(twice, "perlmutter")["entrypoint"].message


def test_directives_read_like_the_scheduler_reads_them():
    slurm = "#!/bin/bash\n#SBATCH -N2 -A abc\n#SBATCH --time 30 --exclusive\necho hi\n#SBATCH -p late\n"
    found = {(o.name, o.value, o.line) for o in schedulers.get("slurm").options(slurm)}
    assert found == {("nodes", "2", 2), ("account", "abc", 2), ("time", "30", 3), ("exclusive", None, 3)}
    pbs = "#!/bin/bash\n#PBS -l select=2:system=polaris,walltime=1:00:00\n#PBS -q debug -k doe\n"
    found = {(o.name, o.value) for o in schedulers.get("pbs").options(pbs)}
    assert found == {("select", "2:system=polaris"), ("walltime", "1:00:00"), ("queue", "debug"), ("k", "doe")}


def test_static_checks_read_what_extraction_reads():
    # The review's probes 7a and N2: one reader, so the checks see the size extraction sees.
    polaris = script_for("polaris-pytorch-ddp")
    attached = re.sub(r"(?m)^#PBS -l select=\S+", "#PBS -lselect=2:ngpus=4", polaris)
    attached = re.sub(r"(?m)^#PBS -l walltime=\S+", "#PBS -lwalltime=99:00:00", attached)
    found = {c.name: c for c in static_checks(attached, INTENT, get_profile("polaris"))}
    assert "2 nodes" in found["nodes"].message and found["nodes"].ok
    assert not found["walltime"].ok and found["walltime"].severity == "error" and "exceeds" in found["walltime"].message
    torque = re.sub(r"(?m)^#PBS -lselect=\S+", "#PBS -l nodes=2:ppn=4", attached)
    assert "2 nodes" in {c.name: c for c in static_checks(torque, INTENT, get_profile("polaris"))}["nodes"].message
    perlmutter = script_for("perlmutter-pytorch-ddp")
    aliased = re.sub(r"(?m)^#SBATCH --gpus-per-node=\S+\n", "#SBATCH --tasks-per-node=4 --gpus-per-task=2\n", perlmutter)
    assert "8 GPUs per node requested" in failures(aliased, "perlmutter")["gpus-per-node"].message


@pytest.mark.parametrize("value, ok", [("90", True), ("1:30:00", True), ("2-00:00:00", True), ("2-00:00:01", False)])
def test_slurm_time_formats(value, ok):
    script = script_for("perlmutter-pytorch-ddp").replace("--time=01:00:00", f"--time={value}")
    assert ("walltime" not in failures(script, "perlmutter")) == ok
