"""One policy for every edit of a script, whatever proposed it (issue 26 items 2 and 3; the
security review of 2026-11-29, findings P2 and P3).

Each test is an attack that worked before this policy (on main at ccd82dc: the model's add_flag,
set_directive, replace_text and add_module reached the script, its edit was run again by the
loop, and a value Lmod's message gave went into `module load` unquoted) and is now refused. The
language model is stood in for by an object with the llm.Backend interface that answers with
canned JSON: what an endpoint would say when a prompt's fork or log text steers it."""

import json

import pytest

from maple_ci import debug, schedulers
from maple_ci.debug import model, policy
from maple_ci.debug.edits import fields_of_text
from maple_ci.errors import MapleError

SCRIPT = """#!/bin/bash
#SBATCH -A m1234
#SBATCH -C gpu
#SBATCH -q regular
#SBATCH -N 2
#SBATCH --gpus-per-node=4
#SBATCH -t 00:30:00
srun --ntasks-per-node=4 python train.py
"""
# An error no known fix covers, so the model is asked.
LOG = "0: Traceback (most recent call last):\n0:   File \"train.py\", line 3\n0: KeyError: 'MYAPP_DATA'\n"

pytestmark = pytest.mark.usefixtures("module_data_dir")


class Model:
    """A stand-in for a language model endpoint (llm.Backend: a name and chat())."""

    name = "stand-in"

    def __init__(self, *answers: dict):
        self.answers = [json.dumps(a) for a in answers]

    def chat(self, messages: list[dict]) -> str:
        return self.answers.pop(0)


def _proposed(*ops: dict) -> debug.Step:
    answer = {"explanation": "the log says so", "ops": list(ops)}
    return debug.next_fix(SCRIPT, LOG, "perlmutter", debug.fix_context("perlmutter"), llm=Model(answer))


# What the review reproduced with f10 (six ops accepted), and two more of the same kind.
ATTACKS = {
    "srun task prolog": ({"op": "add_flag", "launcher": "srun", "flag": "--task-prolog", "value": "/tmp/x/prolog.sh"},
                         "--task-prolog is not a srun option a fix may pass"),
    "srun export LD_PRELOAD": ({"op": "add_flag", "launcher": "srun", "flag": "--export", "value": "ALL,LD_PRELOAD=/tmp/x.so"},
                               "--export takes ALL or NONE"),
    "sbatch export LD_PRELOAD": ({"op": "set_directive", "name": "--export", "value": "ALL,LD_PRELOAD=/tmp/x.so"},
                                 "--export is not a #SBATCH option a fix may set"),
    "pyxis image": ({"op": "add_flag", "launcher": "srun", "flag": "--container-image", "value": "docker.io#mallory/x"},
                    "--container-image is not a srun option a fix may pass"),
    "absolute interpreter": ({"op": "replace_text", "old": "python", "new": "/tmp/x/bin/python"},
                             "Input tag 'replace_text' found using 'op' does not match"),
    "module file": ({"op": "add_module", "name": "/tmp/x/evil.lua"}, "is not a module name"),
    "module path out": ({"op": "add_module", "name": "../../tmp/x/evil"}, "is not a module name"),
    "output over a dotfile": ({"op": "set_directive", "name": "--output", "value": "/home/me/.bashrc"},
                              "--output is not a #SBATCH option a fix may set"),
    "export by a changed flag": ({"op": "replace_flag", "flag": "--export", "value": "ALL,LD_PRELOAD=libx.so"},
                                 "--export takes ALL or NONE"),
}  # fmt: skip


@pytest.mark.parametrize("name", ATTACKS)
def test_a_models_edit_that_runs_code_is_refused_by_the_one_policy(name):
    """Attack (P2): before, each of these reached the patched script (the model's ops passed only
    a check for `$(`, backticks and `;&|<>`). Now the policy refuses it and no script changes."""
    op, reason = ATTACKS[name]
    step = _proposed(op)
    assert step.attempt is None and step.script == SCRIPT and step.stop == "no_fix"
    assert reason in step.message


def test_the_same_edit_from_the_knowledge_base_is_refused_too():
    """One policy whatever proposed it: the edit a model may not make, a known fix may not make."""
    with pytest.raises(MapleError, match="the fix may not pass --task-prolog to srun"):
        debug.apply_fix(SCRIPT, [debug.kb.AddFlag(op="add_flag", launcher="srun", flag="--task-prolog", value="x.sh")])
    safe = [debug.kb.AddFlag(op="add_flag", launcher="srun", flag="--export", value="ALL")]
    assert "srun --export=ALL --ntasks-per-node=4" in debug.apply_fix(SCRIPT, safe)


def test_a_models_edit_within_the_policy_is_offered():
    step = _proposed({"op": "set_directive", "name": "--qos", "value": "debug"})
    assert step.attempt is not None and "#SBATCH -q debug" in step.script


def test_a_models_fix_is_never_run_by_the_loop():
    """Attack (P2): before, debug_loop ran the model's patched script again by itself (the review's
    PWNED_F10_LLM_TASK_PROLOG, through maple_ci.pipeline.verify_and_debug on slurm and local). Now
    the loop stops at the model's fix, stop reason "review", and the script is run once only."""
    runs = []

    def run(script: str) -> debug.RunOutcome:
        runs.append(script)
        return debug.RunOutcome("MYAPP_DATA" in script, "done" if "MYAPP_DATA" in script else LOG)

    answer = {"explanation": "train.py reads MYAPP_DATA",
              "ops": [{"op": "export_env", "name": "MYAPP_DATA", "value": "$SCRATCH/data"}]}
    report = debug.debug_loop(SCRIPT, run, cluster="perlmutter", llm=Model(answer))
    assert runs == [SCRIPT]
    assert report.stop_reason == "review" and not report.ok and "export MYAPP_DATA=$SCRATCH/data" in report.script
    assert [a.entry_id for a in report.attempts] == ["llm:stand-in"] and "Not run" in report.message


def test_the_model_is_not_offered_free_text_edits():
    assert '"replace_text"' not in model._SCHEMA and '"add_flag"' in model._SCHEMA


# --------------------------------------------------------------------------------------------
# Values a log gives (P3)

MODULE_SCRIPT = "#!/bin/bash\n#SBATCH -N 1\nmodule load pytorch\nsrun python train.py\n"


def _lmod_offers(prerequisite: str) -> str:
    return ('Lmod has detected the following error:  These module(s) or extension(s) exist but cannot be loaded as requested:\n'
            '"pytorch"\n   Try: "module spider pytorch" to see how to load the module(s).\n'
            f"   Or load any one of these options:\n      module load {prerequisite} pytorch\n")  # fmt: skip


@pytest.mark.parametrize("prerequisite", ["$(touch${IFS}/tmp/PWNED)", "gcc$(touch${IFS}/tmp/PWNED)", "`id`", "/tmp/x/evil.lua"])
def test_a_value_the_log_gives_fills_no_edit_unless_it_has_the_fields_form(prerequisite):
    """Attack (P3): before, lmod-module-needs-prerequisite copied Lmod's "module load X" from the
    log into the script unquoted (the review's PWNED_F11_KB_LOG_SUBST: `module load $(touch...)
    pytorch`). Now a log value must have its field's form (a module name) or the fix is not offered."""
    found = debug.diagnose(MODULE_SCRIPT, _lmod_offers(prerequisite), cluster=None)
    assert not any(prerequisite in (c.script or "") for c in found.candidates)
    assert [c.ops[0].new for c in found.candidates] == ["module load <prerequisite> pytorch"]


def test_a_module_name_from_the_log_still_fills_the_fix():
    found = debug.diagnose(MODULE_SCRIPT, _lmod_offers("gcc/13.2.0"), cluster=None)
    assert found.candidates[0].script.split("\n")[2] == "module load gcc/13.2.0 pytorch"


# --------------------------------------------------------------------------------------------
# The knowledge base and the allowlists agree


def test_every_field_a_known_fix_takes_from_a_log_has_a_form():
    for entry in debug.load_kb():
        logged = {name for pattern in entry.regexes for name in pattern.groupindex}
        used = {name for f in entry.alternatives for op in f.ops for k, v in op if k != "op" for name in fields_of_text(v)}
        assert logged & used <= policy.LOG_FIELDS.keys(), entry.id


def test_every_option_a_known_fix_writes_is_on_an_allowlist():
    units = schedulers.all()
    for entry in debug.load_kb():
        for op in (op for f in entry.alternatives for op in f.ops):
            named = fields_of_text(getattr(op, "name", "")) or fields_of_text(getattr(op, "launcher", ""))
            if op.op == "set_directive" and not named:
                assert any(u.knows(op.name) and u.canonical(op.name) in u.fix_options for u in units), (entry.id, op)
            if op.op == "add_flag" and not named and not fields_of_text(op.value):
                policy.check(op, None)  # raises when the flag or its value is not allowed
