"""Every value a source script carries, classified by one table (templates/values.yaml).

The table is an allowlist: an environment variable no row names is not carried, and the port's
header names it. Each row says whether a value is portable (keep), the target's own replaces it
(replace), it has no equivalent or runs code (drop), or it is the user's to decide (ask); a kept
value must also have the row's form (a literal word, a count, or a path the target has).
The debug agent's edits pass the same table (edit_refusal).
"""

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Optional

from .data_cache import load_yaml
from .errors import MapleError
from .paths import bundled

VERDICTS = ("keep", "replace", "drop", "ask")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # fullmatch: `$` would accept a trailing newline
_SEGMENT = r"(?:[\w.,+@%=-]|\$USER\b|\$\{USER\})+"
# Roots every target has for the user: home, scratch, work, the submit directory, node-local /tmp.
_ROOT = r"(?:\$\{?(?:HOME|SCRATCH|WORK|PWD|TMPDIR)\}?|~|/tmp)"
_LIBVAR = r"(?:LD_LIBRARY_PATH|LIBRARY_PATH|CONDA_PREFIX|CUDA_HOME|ROCM_PATH)"
_LIBDIR = rf"(?:\${_LIBVAR}\b|\$\{{{_LIBVAR}\}})(?:/lib(?:64)?)?"
FORMS = {
    "word": re.compile(r"[\w.,:+=@%-]*"),
    "count": re.compile(r"\d+"),
    "path": re.compile(rf"(?:{_ROOT}|\.?{_SEGMENT})(?:/{_SEGMENT})*/?"),
    # The library directories the job's own modules or conda environment set, around the loader's
    # path as it is; never a literal directory: `$LD_LIBRARY_PATH:$LIBRARY_PATH`, `$CONDA_PREFIX/lib:...`.
    "loader_path": re.compile(rf"(?=.*\$\{{?LD_LIBRARY_PATH\b){_LIBDIR}(?::{_LIBDIR})*"),
    # Under the job's own temporary directory (the scheduler gives each job one: the TMPDIR row).
    "job_dir": re.compile(rf"\$\{{?TMPDIR\}}?(?:/{_SEGMENT})*/?"),
}
# An absolute path, or one under a variable of the source site ($PROJECT_DIR/data): the user's to map.
_SITE_PATH = re.compile(r"(?:/|\$\{?[A-Za-z_]\w*\}?/)[^`()\n;|&<>]*")
# An argument (or --name=/value) that is an absolute path outside what every node has (/tmp, /dev/shm).
_ARGUMENT_PATH = re.compile(r"(?:[^=\s]*=)?(/(?!tmp/|tmp$|dev/shm)[^\s,]+)")
_FORM_TEXT = {"word": "a literal word", "count": "a whole number",
              "path": "a path under $HOME, $SCRATCH, $WORK, $PWD or /tmp, or relative to the checkout",
              "loader_path": "$LD_LIBRARY_PATH with the job's own $LIBRARY_PATH, $CONDA_PREFIX/lib, $CUDA_HOME/lib64 or $ROCM_PATH/lib",
              "job_dir": "a directory under the job's own $TMPDIR"}


@dataclass(frozen=True)
class Rule:
    names: tuple[str, ...]
    verdict: str
    reason: str
    value: Optional[str] = None  # the form a kept value must have
    vendors: Optional[tuple[str, ...]] = None
    to: Optional[str] = None  # what replaces it: "cores_per_rank"
    fix_form: Optional[str] = None  # the form a known fix may set it to, though a port drops it


@dataclass(frozen=True)
class Target:
    """What the table needs to know about the port's target."""

    name: str
    vendor: str
    same_cluster: bool  # the source was written for this cluster: its own tuning stays
    cores_per_rank: int


def _rule(row: dict) -> Rule:
    forms_ok = row.get("value", "word") in FORMS and row.get("fix_form", "word") in FORMS
    if row.get("verdict") not in VERDICTS or not forms_ok or not row.get("reason"):
        raise MapleError(f"templates/values.yaml: bad row {row}")
    return Rule(tuple(row["names"]), row["verdict"], row["reason"], row.get("value"),
                tuple(row["vendors"]) if row.get("vendors") else None, row.get("to"), row.get("fix_form"))


@lru_cache(maxsize=1)
def table() -> tuple[tuple[Rule, ...], dict]:
    """(env rules in order, the other values' rows). Always the package's table: a custom template
    library (MAPLE_TEMPLATES_DIR) does not change what a port may carry."""
    data = load_yaml(bundled("templates") / "values.yaml")
    return tuple(_rule(row) for row in data["env"]), data["values"]


def env_rule(name: str) -> Optional[Rule]:
    """The first row naming `name`, or None: not on the allowlist."""
    return next((rule for rule in table()[0] if any(_named(name, p) for p in rule.names)), None)


def _named(name: str, pattern: str) -> bool:
    """fnmatchcase, without compiling the two common forms (a name; a prefix and `*`): 278 of the
    table's 319 patterns, whose compiling cost a port 20-30 ms."""
    if not any(c in pattern for c in "*?["):
        return name == pattern
    if pattern.endswith("*") and not any(c in pattern[:-1] for c in "*?["):
        return name.startswith(pattern[:-1])
    return fnmatchcase(name, pattern)


def reason(value: str) -> str:
    """Why the table treats a non-env value (`account`, `container_image`, ...) as it does."""
    return table()[1][value]["reason"]


def _form_ok(form: str, value: str) -> bool:
    return bool(FORMS[form].fullmatch(value)) and "/../" not in f"/{value}/"


def _decide(name: str, value: str, rule: Optional[Rule], target: Target) -> tuple[str, Optional[str], str]:
    """(verdict, the value to export or None, why) for one variable."""
    if rule is None:
        return "unlisted", None, ""
    if rule.verdict == "drop":
        return "drop", None, rule.reason
    if rule.vendors and target.vendor not in rule.vendors:
        return "drop", None, f"{rule.reason} ({target.name} has {target.vendor} GPUs)"
    if rule.verdict == "replace":
        return _replaced(value, rule, target)
    return _by_form(name, value, rule.value or "word", target)


def _replaced(value: str, rule: Rule, target: Target) -> tuple[str, Optional[str], str]:
    """A value the target replaces, except on the source's own cluster, where a plain one stays."""
    if target.same_cluster and (_form_ok("word", value) or _form_ok("path", value)):
        return "keep", value, ""
    kept = str(target.cores_per_rank) if rule.to == "cores_per_rank" else None
    return "replace", kept, rule.reason


def _by_form(name: str, value: str, form: str, target: Target) -> tuple[str, Optional[str], str]:
    """A value kept when it has its rule's form; a source site's path only on its own cluster."""
    if _form_ok(form, value) or form == "path" and target.same_cluster and _SITE_PATH.fullmatch(value):
        return "keep", value, ""
    if form == "path" and _SITE_PATH.fullmatch(value):
        return "ask", None, f"{value} is a path on the source site: set {name} to your path on {target.name}"
    return "drop", None, f"its value must be {_FORM_TEXT[form]}, not {value!r}"


@dataclass
class _Sorted:
    """Source variables as port_env sorts them."""

    kept: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)
    dropped: dict[str, list[str]] = field(default_factory=dict)  # why -> names

    def add(self, name: str, value: str, decision: tuple[str, Optional[str], str], in_site: bool) -> None:
        verdict, new, why = decision
        if in_site and verdict != "drop":
            self.replaced.append(name)
        elif verdict == "unlisted":
            self.unlisted.append(name)
        elif verdict in ("keep", "replace") and new is not None:
            self.kept[name] = new
            if verdict == "replace" and new != value:
                self.notes.append(f"{name}={value} becomes {new}: {why}")
        elif verdict == "replace":
            self.replaced.append(name)
        else:
            self.dropped.setdefault(why, []).append(name)

    def all_notes(self, target: Target) -> list[str]:
        notes = self.notes + [f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} not carried over: {why}"
                              for why, names in self.dropped.items()]
        if self.replaced:
            notes.append(f"source settings replaced by {target.name}'s: {', '.join(sorted(self.replaced))}")
        if self.unlisted:
            notes.append(f"not carried over, no row of templates/values.yaml makes them portable: "
                         f"{', '.join(sorted(self.unlisted))}; export them yourself on the target if the program reads them")
        return notes


def port_env(env: dict[str, str], target: Target, site: set[str]) -> tuple[dict[str, str], list[str]]:
    """(the source variables the port exports, header notes naming every one it does not carry).
    `site` is what the target's profile sets: its values stand."""
    found = _Sorted()
    for name, value in env.items():
        if not _NAME.fullmatch(name):
            found.notes.append(f"{name!r} is not carried over: it is not a valid shell variable name")
            continue
        found.add(name, value, _decide(name, value, env_rule(name), target), name in site)
    return found.kept, found.all_notes(target)


def path_notes(args: list[str], cluster: str, same_cluster: bool, entrypoint: Optional[str] = None) -> list[str]:
    """Header notes naming the program, and its arguments, where they are paths on the source site's
    file systems: the port keeps them as written (they are the program's), so the user maps them."""
    if same_cluster:
        return []
    notes = []
    if entrypoint and _ARGUMENT_PATH.fullmatch(entrypoint):
        notes.append(f"the program itself is at a path on the source site's file systems, kept as written: "
                     f"{entrypoint}; give its path on {cluster} (--entrypoint), e.g. in your checkout there")
    paths = [m.group(1) for arg in args if (m := _ARGUMENT_PATH.match(arg))]
    if paths:
        notes.append(f"the program's arguments name paths on the source site's file systems, kept as written: "
                     f"{', '.join(dict.fromkeys(paths))}; give your paths on {cluster} (for example under $SCRATCH)")
    return notes


def edit_refusal(name: str, value: Optional[str]) -> Optional[str]:
    """Why a debug fix may not export name=value, or None. A fix is made for the target, so the
    target's own settings (replace rows) are allowed; what the table drops or does not list is not.
    `value` None: a person fills it in (a site value), so only the name is checked."""
    rule = env_rule(name)
    if rule is None:
        return f"{name} is not on the allowlist of templates/values.yaml"
    if rule.fix_form:
        ok = value is None or _form_ok(rule.fix_form, value)
        return None if ok else f"{name}: a fix may set it only to {_FORM_TEXT[rule.fix_form]}"
    if rule.verdict == "drop":
        return f"{name}: {rule.reason}"
    if value is not None and re.search(r"[\n\r\x00]", value):
        return f"the value of {name} spans lines"
    return None


def _inside_checkout(word: str) -> bool:
    return bool(_form_ok("path", word)) and not word.startswith(("/", "$", "~"))


def _runs(word: str) -> bool:
    """Whether a profiler's word is a path to a program it runs (a wrapper), not an option or a value."""
    return not word.startswith("-") and ("/" in word or word.startswith(("$", "~")))


def _profiler_words(words: list[str], rules: dict, cluster: str) -> tuple[list[str], list[str]]:
    """A profiler's words without its env/injection options, an output path the target lacks, nor
    a wrapper outside the checkout (the wrapper rule holds after a profiler too)."""
    kept, notes, skip = [words[0]], [], False
    drop, outputs = set(rules["drop_options"]), set(rules["output_options"])
    for word in words[1:]:
        if skip:
            skip = False
            continue
        flag, equals, _ = word.partition("=")
        if flag in drop:
            notes.append(f"the profiler's option {flag} is not carried over: it sets the profiled program's environment or loads code into it")
            skip = not equals
        elif kept[-1] in outputs and word.startswith(("/", "~")) and not _form_ok("path", word):
            kept.pop()  # the option that named it goes too: -o /scratch/...
            notes.append(f"the profiler's output path {word} is on the source site: nsys/ncu write to the working directory on {cluster} unless you give -o <your path>")
        elif kept[-1] not in outputs and _runs(word) and not _inside_checkout(word):
            # an option just before it may take it as its value: it goes too (nothing dangles)
            dropped = [kept.pop(), word] if kept[-1].startswith("-") and "=" not in kept[-1] else [word]
            notes.append(f"the profiler's words `{' '.join(dropped)}` are not kept: they run a program outside the "
                         f"checkout ({reason('wrapper')}); run it under your own wrapper on {cluster} if it needs one")
        else:
            kept.append(word)
    return kept, notes


def port_wrapper(words: list[str], cluster: str) -> tuple[list[str], list[str]]:
    """(the per-rank wrapper's words a port keeps, notes): a known profiler without its env and
    injection options, or a program inside the checkout; anything else is named and not kept."""
    if not words:
        return [], []
    profilers = table()[1]["profilers"]
    program = words[0]
    if program in profilers:
        return _profiler_words(words, profilers[program], cluster)
    # `bash wrap.sh` reads the file from the working directory; a bare `wrap.sh` is looked up in PATH.
    script = words[1] if program in ("bash", "sh") and len(words) > 1 else program
    if _inside_checkout(script) and ("/" in script or script is not program):
        return list(words), []
    return [], [f"the per-rank wrapper `{' '.join(words)}` is not kept ({reason('wrapper')}): "
                f"run the program under your own wrapper on {cluster} if it needs one"]
