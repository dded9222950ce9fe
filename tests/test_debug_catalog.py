"""The message catalogues (templates/errors, entries with a component and where they were read),
`maple bench --suite catalog`, the held-out folder, and the two breaking edits refused as
classes (issue 27)."""

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from maple_ci import debug, schedulers
from maple_ci.bench_catalog import catalog_log, catalog_messages, run_catalog
from maple_ci.bench_cli import run_suite
from maple_ci.bench_debug import debug_dir, load_debug_cases
from maple_ci.debug import policy
from maple_ci.debug.kb import KBEntry, RemoveDirective, ReplaceText, SetDirective
from maple_ci.errors import MapleError

HELD_OUT = debug_dir() / "heldout-2026-11-29" / "cases"


def test_catalogue_cites_its_sources_across_components():
    entries = [e for e in debug.load_kb() if e.component]
    assert all(e.read_from and e.source.startswith("https://") for e in entries)
    # Eight tools: a component's variants (slurm-pending: squeue's reasons) are its tool's.
    assert len({e.component.split("-")[0] for e in entries}) >= 8
    assert len(catalog_messages()) >= 400


def test_apptainers_catalogue_names_the_file_and_line_of_each_message_at_its_release():
    entries = [e for e in debug.load_kb() if e.component == "apptainer"]
    assert len(entries) >= 20
    for e in entries:
        assert re.fullmatch(r"apptainer/apptainer [\w/.]+\.go:\d+ @ v1\.5\.3 \(6a76317\)(?:; .+)?", e.read_from), e.id
        assert e.source.startswith("https://github.com/apptainer/apptainer/blob/6a76317a87c4eae10f52c7805965756a919291d7/")


def test_apptainers_gpu_warning_is_the_error_when_the_driver_is_missing_on_the_node():
    log = ("+ srun apptainer exec --nv pt.sif python train.py\nWARNING: Could not find any nv libraries on this host!\n"
           "RuntimeError: Found no NVIDIA driver on your system.\n")  # fmt: skip
    found = debug.diagnose("#!/bin/bash\n#SBATCH -p cpu\nsrun apptainer exec --nv pt.sif python train.py\n", log, None)
    assert found.failure.line.startswith("WARNING: Could not find any nv libraries")
    assert found.matches[0].entry.id == "apptainer-gpu-libraries-missing"
    # A job that asks for no GPUs: the fix is the site's GPU request, with the commands that find it.
    assert found.advice.kind == "site_value" and found.advice.text.startswith("--nv (or --rocm) found no GPU driver")


def test_a_catalogue_entry_without_its_reading_is_refused():
    entry = {"id": "x", "patterns": ["boom"], "category": "program", "explanation": "e",
             "source": "https://example.org/", "examples": ["boom"], "component": "slurm"}
    with pytest.raises(ValidationError, match="read_from"):
        KBEntry.model_validate(entry)


def test_every_catalogue_message_is_answered_in_a_realistic_log():
    report = run_catalog(catalog_messages())
    total = report["all"]
    assert total["located"] == total["classified"] == total["messages"]
    assert total["actionable"] >= 0.95 * total["messages"] and total["wrong_edit"] == 0


def test_a_catalogue_log_puts_ordinary_output_before_the_message():
    message = next(m for m in catalog_messages() if m.entry.component == "nccl")
    log = catalog_log(message)
    failure = debug.locate(log)
    assert failure.line_no > 1 and message.text.split("\n")[0] in log.split("\n")[failure.line_no - 1]


def test_pending_reasons_are_read_from_squeue_and_scontrol():
    for text in ["  4211873       gpu    train    alice PD       0:00      2 (QOSMaxGRESPerUser)",
                 "   JobState=PENDING Reason=AssocGrpGRES Dependency=(null)"]:
        hits = debug.exact_matches(debug.locate(text))
        assert hits[0].entry.id == "slurm-pending-usage-limit"
    assert debug.locate("  4211873   gpu  train  alice PD  0:00  2 (None)") is None


def test_a_nccl_warn_naming_its_cause_gets_no_nccl_debug_edit():
    script = "#!/bin/bash\n#SBATCH --nodes=2\nsrun python train.py\n"
    log = ("gpu-a017:4121:4187 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n"
           "gpu-a017:4121:4187 [0] misc/ibvwrap.cc:195 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory\n"
           "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error "
           "(run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n")
    found = debug.diagnose(script, log, None)
    assert found.matches[0].entry.id == "nccl-ib-verbs-failed" and found.advice.kind == "infrastructure"
    assert not any(op.name == "NCCL_DEBUG" for c in found.candidates for op in c.ops if op.op == "export_env")


def test_removing_the_account_or_partition_needs_a_replacement():
    slurm = schedulers.get("slurm")
    with pytest.raises(MapleError, match="without naming a replacement"):
        policy.check_fix([RemoveDirective(op="remove_directive", name="-A")], slurm)
    with pytest.raises(MapleError, match="replacement"):
        policy.check_fix([RemoveDirective(op="remove_directive", name="--partition")], slurm)
    policy.check_fix([RemoveDirective(op="remove_directive", name="-A"),
                      SetDirective(op="set_directive", name="--account", value="<account>")], slurm)
    policy.check_fix([RemoveDirective(op="remove_directive", name="--qos")], slurm)  # the default QOS is the partition's


def test_a_per_task_value_goes_where_each_task_expands_it():
    script = "#!/bin/bash\n#SBATCH --nodes=2\nsrun torchrun --node_rank=0 train.py\n"
    bare = [ReplaceText(op="replace_text", old="--node_rank=0", new="--node_rank=$SLURM_NODEID")]
    with pytest.raises(MapleError, match="per-task value"):
        debug.apply_fix(script, bare)
    quoted = "#!/bin/bash\nsrun bash -c 'torchrun --node_rank=0 train.py'\n"
    assert "$SLURM_NODEID" in debug.apply_fix(quoted, bare)
    escaped = 'L="accelerate launch --machine_rank $SLURM_NODEID"\nsrun bash -c "$L train.py"\n'
    assert policy.per_task_refusal(escaped, escaped.replace("$SLURM_NODEID", "\\$SLURM_NODEID")) is None
    assert policy.per_task_refusal("srun a.out\n", "export NODE_RANK=$SLURM_PROCID\nsrun a.out\n")


def test_the_held_out_folder_loads_against_the_suites_classes():
    cases = load_debug_cases(cases_dir=HELD_OUT)
    assert len(cases) >= 30 and {c.scheduler for c in cases} >= {"slurm", "pbs", "lsf"}
    assert not {c.id for c in cases} & {p.stem for p in (debug_dir() / "cases").glob("*.yaml")}


def test_cases_folder_is_only_for_the_debug_suite(tmp_path: Path):
    with pytest.raises(MapleError, match="--cases is for --suite debug"):
        run_suite("catalog", None, 1, progress=None, quiet=True, cases_dir=tmp_path)


def test_apptainers_try_userns_becomes_the_edit_on_the_containers_own_command():
    script = "#!/bin/bash\n#SBATCH -N 2\nsrun singularity run --nv -B /lus:/lus img.sif torchrun train.py\n"
    log = "FATAL:   container creation failed: nvidia-container-cli not allowed in setuid mode\n"
    [top] = debug.diagnose(script, log, None).candidates
    assert top.script == script.replace("singularity run --nv", "singularity run --userns --nv")
    # Already in user namespace mode: nothing to add, the advice stands.
    assert not debug.diagnose(top.script, log, None).candidates
