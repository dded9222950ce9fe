"""The one policy every edit of a script passes, whatever proposed it: a known fix
(templates/errors) or a language model (debug.model). DESIGN.md, "Principles": a model only
proposes typed edits that pass the same policy as every other edit (issue 26 items 2 and 3).

    check(op, unit)                MapleError when a resolved edit may not be made (every op, every source)
    check_fix(ops, unit)           MapleError when a fix as a whole would break the job (issue 27, E)
    per_task_refusal(old, new)     why an edited script hands the batch shell a per-task value, or None
    model_refusal(op)              why a model's edit is refused before it is resolved, or None
    log_value_refusal(name, value) why a value captured from a log may not fill the field `name`, or None

What an edit may write is on allowlists: a variable passes templates/values.yaml
(values.edit_refusal); a directive must be one of the scheduler unit's `fix_options`, a launcher
flag one of the launcher registry's (launchers/grammars.yaml), each with the form of its value; a
module is named, never given as a file. The package's own fix text is reviewed like code; what
comes from outside it (a model's values, a log's) must also hold no command.
"""

import re
from typing import Optional

from .. import launchers, schedulers
from ..errors import MapleError
from ..values import FORMS as VALUE_FORMS
from ..values import edit_refusal

# What may be run, substituted or chained, or start a new line of the script.
COMMAND = re.compile(r"\$\(|`|[;&|<>\n\r\x00]")
# A site value a person fills in (debug.candidates): shown as written, never run.
PLACEHOLDER = re.compile(r"<[a-z_]+>")
# A module as `module load` names it (gcc, cray-mpich/8.1.28, PrgEnv-gnu): never a file path, so
# no leading / and no . or .. part.
_PART = r"(?!\.\.?(?:/|$))[\w.+-]+"
MODULE = re.compile(rf"{_PART}(?:/{_PART})*")

# The forms an option's value may have (fix_options in the registries name them).
FORMS = {
    "word": VALUE_FORMS["word"],  # a literal without / or $: gpu:4, 01:00:00, home:eagle, ALL
    "count": VALUE_FORMS["count"],
    "count_or_variable": re.compile(r"\d+|\$\{?[A-Za-z_]\w*\}?"),  # srun -c $SLURM_CPUS_ON_NODE
    "all_or_none": re.compile(r"ALL|NONE"),  # srun --export: never a list that sets variables
    "flag": re.compile(r""),  # takes no value
    "log_name": re.compile(r"[\w%-]+\.(?:out|err|log)"),  # a job log in the working directory
    "person": re.compile(r"(?!)"),  # only a value a person fills in (a <placeholder>)
}
_FORM_TEXT = {"word": "a literal word (no / or $)", "count": "a whole number", "count_or_variable":
              "a whole number or one $VARIABLE", "all_or_none": "ALL or NONE", "flag": "no value",
              "log_name": "a log file name in the working directory (NAME.out)", "person": "a value you fill in"}

# Container runtimes have no entry in the launcher registry (extract/options.py reads their
# options): --nv/--rocm give the GPUs; a bind is a directory of the user's, which a person names.
_RUNTIME_OPTIONS = {runtime: {"nv": "flag", "rocm": "flag", "bind": "person"} for runtime in ("apptainer", "singularity")}
# The training program's own options a fix may change in place (replace_flag): the distributed
# backend (nccl, gloo, xccl; ALCF's Aurora page for xccl).
_PROGRAM_OPTIONS = {"backend": "word"}
# A model edits only through typed operations (debug.model offers it these); free text
# (replace_text) is the knowledge base's.
MODEL_OPS = ("set_directive", "remove_directive", "add_module", "export_env", "unset_env", "replace_flag", "add_flag")
# What an edit does, for the refusal's message.
_DOING = {"export_env": "export {name}", "set_directive": "set {name}", "add_flag": "pass {flag} to {launcher}",
          "replace_flag": "change {flag}", "add_module": "load the module {name}"}


def _value_refusal(what: str, value: str, form: str) -> Optional[str]:
    """Why `value` does not have the form; a <placeholder> in it (gpu:<gpus>, from the knowledge
    base only: a model's `<` is a command) stands for a value a person fills in."""
    if PLACEHOLDER.fullmatch(value) or FORMS[form].fullmatch(PLACEHOLDER.sub("0", value)):
        return None
    return f"{what} takes {_FORM_TEXT[form]}, not {value!r}"


def _directive_refusal(op, unit) -> Optional[str]:
    name = unit.canonical(op.name) if unit.knows(op.name.strip()) else None
    form = unit.fix_options.get(name)
    if form is None:
        return f"{op.name} is not a {unit.prefix} option a fix may set (it may set: {', '.join(sorted(unit.fix_options))})"
    return _value_refusal(op.name, op.value, form)


def _launcher_options(name: str) -> tuple[Optional[dict], Optional[launchers.Spec]]:
    found = launchers.launcher(name)
    if found is not None:
        return found.fix_options, found.spec
    return _RUNTIME_OPTIONS.get(name), None


def _option_form(flag: str, options: dict, spec: Optional[launchers.Spec]) -> Optional[str]:
    name = launchers.option_name(flag, spec) if spec else flag.lstrip("-")
    return options.get(name) if name else None


def _flag_refusal(op) -> Optional[str]:
    options, spec = _launcher_options(op.launcher)
    form = _option_form(op.flag, options, spec) if options else None
    if form is None:
        return f"{op.flag} is not a {op.launcher} option a fix may pass"
    return _value_refusal(op.flag, op.value, form)


def _replaced_flag_refusal(op) -> Optional[str]:
    """A flag whose value changes where the script passes it: some launcher's (or the program's
    backend) with a value of that launcher's form for it."""
    registered = [(found.fix_options, found.spec) for name in launchers.names() if (found := launchers.launcher(name))]
    forms = {_option_form(op.flag, options, spec) for options, spec in [*registered, (_PROGRAM_OPTIONS, None)]} - {None}
    if not forms:
        return f"{op.flag} is not an option a fix may change"
    refusals = [_value_refusal(op.flag, op.value, form) for form in forms]
    return None if None in refusals else refusals[0]


def _module_refusal(op) -> Optional[str]:
    if PLACEHOLDER.fullmatch(op.name) or MODULE.fullmatch(op.name):
        return None
    return f"{op.name!r} is not a module name (NAME or NAME/VERSION; never a file)"


def _refusal(op, unit) -> Optional[str]:
    if op.op == "export_env":  # a <placeholder> is a person's value: only the name is checked
        return edit_refusal(op.name, None if PLACEHOLDER.fullmatch(op.value) else op.value)
    if op.op == "set_directive":
        return _directive_refusal(op, unit)
    if op.op == "add_flag":
        return _flag_refusal(op)
    if op.op == "replace_flag":
        return _replaced_flag_refusal(op)
    if op.op == "add_module":
        return _module_refusal(op)
    return None  # removing a directive or a variable writes nothing; replace_text is the package's own


def check(op, unit) -> None:
    """Refuse (MapleError) the resolved edit `op` to a script of scheduler `unit` unless the
    policy allows it."""
    why = _refusal(op, unit)
    if why:
        raise MapleError(f"the fix may not {_DOING[op.op].format(**dict(op))}: {why}")


def model_refusal(op) -> Optional[str]:
    """Why a language model's edit is refused before anything is filled in: a value that would
    run, substitute or chain a command (its op kinds are MODEL_OPS only: debug.model)."""
    unsafe = [v for k, v in op if k != "op" and isinstance(v, str) and COMMAND.search(v)]
    return f"its {op.op} would add a command ({unsafe[0]!r}); model edits may not" if unsafe else None


# The form of each field a known fix fills from a log (a named group of its pattern). A field not
# listed here is never filled from a log.
_OPTION = re.compile(r"--?[A-Za-z][\w-]*")
LOG_FIELDS = {
    "module": MODULE, "prereq1": MODULE, "prereq2": MODULE, "gnu": MODULE,
    "ifname": re.compile(r"[A-Za-z][\w.:-]*"),  # a network interface (hsn0, ib0.8066)
    "network": re.compile(r"[\w.-]+(?: [\w.-]+)*"),  # the NCCL network plugin's name (AWS Libfabric, OFI)
    "asked": FORMS["count"], "devices_per_node": FORMS["count"],
    "option": _OPTION, "old_flag": _OPTION, "new_flag": _OPTION,
    "value": FORMS["word"], "new_value": FORMS["word"], "resource": FORMS["word"],
    # Lmod's own messages name modules (lmod-messages.yaml): the prerequisites, the versions to swap
    "prereqs": re.compile(rf"{MODULE.pattern}(?:[ \t]+{MODULE.pattern})*"), "old": MODULE, "new": MODULE,
    "full": MODULE, "sn": MODULE, "unpinned": MODULE,
}


def log_value_refusal(name: str, value: str) -> Optional[str]:
    """Why `value`, captured from a log, may not fill the field `name` of a known fix: a command,
    or not the field's form (a module name, an interface, a number, an option)."""
    form = LOG_FIELDS.get(name)
    if COMMAND.search(value) or form is None or not form.fullmatch(value):
        return f"the log's {name} {value!r} is not {'a value of that form' if form else 'a value a fix takes from a log'}"
    return None


# ---------------------------------------------------------------------------------------------
# Edits that break the job though each op is allowed (issue 27, E)

# Whom the job is billed to and where it runs: without the option the site's default applies,
# which may refuse the job (deleting -A gpu fell back to a default account the GPU partition
# rejects), so a fix removes one only when it also sets the option.
_PLACEMENT = frozenset({"account", "partition", "queue", "project"})


def check_fix(ops, unit) -> None:
    """Refuse (MapleError) a fix that removes the job's account, partition or queue without
    setting a replacement for it in the same fix."""
    if unit is None:
        return
    names = {unit.canonical(op.name) for op in ops if op.op == "set_directive"}
    for op in ops:
        name = unit.canonical(op.name) if op.op == "remove_directive" else None
        if name in _PLACEMENT and name not in names:
            raise MapleError(f"the fix may not remove {op.name} without naming a replacement: the site's default "
                             f"{name} may refuse the job (name the one to use instead)")


# Values that differ per task: each scheduler's rank, local rank and node index (its job_vars). The batch
# shell expands them once, to the batch task's value, before srun starts any task.
_PER_TASK = frozenset(
    v for unit in schedulers.all() for key in ("rank", "local_rank", "node_index") for v in unit.job_vars.get(key, ())
)
_PER_TASK_REF = re.compile(r"\\?\$\{?(" + "|".join(sorted(_PER_TASK)) + r")\b")


def _expanded_here(script: str) -> int:
    """How many per-task references the shell running `script` expands itself: not escaped (\\$)
    and not inside single quotes (a command each task's own shell runs, e.g. srun bash -c '...')."""
    count, quoted = 0, False
    for m in re.finditer(r"'|" + _PER_TASK_REF.pattern, script):
        if m[0] == "'":
            quoted = not quoted
        elif not quoted and not m[0].startswith("\\"):
            count += 1
    return count


def per_task_refusal(old: str, new: str) -> Optional[str]:
    """Why the edited script `new` is refused: it hands the batch shell a per-task value it would
    expand once for every task (--node_rank=$SLURM_NODEID on an srun line is 0 on every node)."""
    if _expanded_here(new) > _expanded_here(old):
        return ("a per-task value ($SLURM_NODEID, $SLURM_PROCID, ...) belongs where each task expands it: "
                "inside the command srun runs (srun bash -c '... $SLURM_NODEID ...'), not on the batch shell's line")
    return None

