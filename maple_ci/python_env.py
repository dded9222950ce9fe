"""The user's Python environment on a target whose center provides none with the framework
(FrameworkSetup.user_env: OLCF Frontier, TACC Lonestar6 and Stampede3, Purdue Anvil, PSC Bridges-2),
or none with the program's framework at all (JAX, TensorFlow, Horovod...: `framework_env`).

`maple port --python-env PATH` (or CLUSTER=PATH for one target; the bot's `python_env` config key)
names it. A port to such a target activates it in the job; without one the job stops at once with
a message saying what to give, so a program never runs on without torch. A center's own
environment (a module) needs nothing: the option is ignored there.
"""

import re
from typing import Mapping, Optional

from .errors import MapleError
from .intent import OWN_RUNTIME, TEMPLATE_FRAMEWORKS
from .profiles import ClusterProfile, FrameworkSetup
from .shell_words import shell_word

# Allowlist: a path or a conda env name, optionally under ~ or one variable ($SCRATCH/envs/torch).
_ENV_PATH = re.compile(r"(?:~/|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?/?)?[A-Za-z0-9_.+@%=:/-]*")
ALL = "default"  # the key for every target
_NAMES = {"deepspeed": "DeepSpeed", "accelerate": "Accelerate"}  # as the stop message names them


def parse_python_envs(values: list[str]) -> dict[str, str]:
    """--python-env values: PATH for every target, CLUSTER=PATH for one. MapleError on bad input."""
    envs = {}
    for value in values:
        cluster, sep, path = value.partition("=")
        if not sep or "/" in cluster or not re.fullmatch(r"[a-z0-9_-]+", cluster):
            cluster, path = ALL, value
        envs[cluster] = check_env_path(path)
    return envs


def check_env_path(path: str) -> str:
    if not path or ".." in path.split("/") or not _ENV_PATH.fullmatch(path):
        raise MapleError(f"--python-env {path!r}: give a path or conda env name of letters, digits and "
                         "_.+@%=:/- (it may start with ~/ or one $VARIABLE)")
    return path


def activation(kind: str, path: str) -> str:
    if kind == "conda":
        return f"conda activate {shell_word(path)}"
    return f"source {shell_word(path.rstrip('/') + '/bin/activate')}"


def _missing(profile: ClusterProfile, framework: str) -> str:
    """What the center's set-up lacks for `framework`: PyTorch itself, or only the framework where
    its PyTorch set-up needs no user environment (JSC's and CSCS's PyTorch, without DeepSpeed)."""
    name = _NAMES.get(framework, framework)
    if framework == "pytorch" or profile.setup_for("pytorch").user_env:
        return "no PyTorch environment"
    return f"a PyTorch environment without {name}"


def _stop_line(profile: ClusterProfile, framework: str, setup: FrameworkSetup) -> str:
    what = "conda environment" if setup.user_env == "conda" else "virtual environment (venv)"
    message = (f"maple-ci: {profile.display_name} provides {_missing(profile, framework)}; port this job again "
               f"with --python-env PATH naming your {what} there ({setup.user_env_docs}). Stopping before the "
               f"program runs without it.")
    return f"echo {shell_word(message)} >&2; exit 1"


def with_python_env(profile: ClusterProfile, envs: Mapping[str, str], framework: str
                    ) -> tuple[ClusterProfile, Optional[str]]:
    """(the profile whose framework set-ups activate the user's environment or stop the job, the
    header note for the set-up `framework` runs under), or (the profile unchanged, None) where the
    center provides the environment. The note follows that set-up only: a PyTorch port to a site
    whose PyTorch module needs nothing more says nothing of DeepSpeed's venv."""
    if not any(setup.user_env for setup in profile.frameworks.values()):
        return profile, None
    path = envs.get(profile.name) or envs.get(ALL)
    frameworks = {}
    for name, setup in profile.frameworks.items():
        if setup.user_env:
            line = activation(setup.user_env, path) if path else _stop_line(profile, name, setup)
            setup = setup.model_copy(update={"setup": [*setup.setup, line]})
        frameworks[name] = setup
    runs = framework if framework in profile.frameworks else "pytorch"
    kind = profile.setup_for(runs).user_env
    updated = profile.model_copy(update={"frameworks": frameworks})
    if not kind:
        return updated, None
    missing = _missing(profile, runs)
    if path:
        return updated, f"{profile.name} provides {missing}: the job activates yours, {path}"
    return updated, (f"{profile.name} provides {missing}: port again with --python-env PATH (your {kind} "
                     "environment there); as written the job stops at once")


def framework_env(profile: ClusterProfile, framework: str, envs: Mapping[str, str]
                  ) -> tuple[ClusterProfile, Optional[str]]:
    """(the profile whose every set-up runs `framework`, the header note). A framework the profile
    lists a set-up for gets that one; a framework it does not provide gets the user's environment
    (after the site's PyTorch set-up for the PyTorch programs, in its place for JAX and TensorFlow),
    or a first line that stops the job saying what to give: never the site's PyTorch silently."""
    if profile.provides(framework):
        chosen = profile.frameworks.get(framework)
        return (_only(profile, chosen) if chosen and framework not in TEMPLATE_FRAMEWORKS else profile), None
    path = envs.get(profile.name) or envs.get(ALL)
    base = profile.setup_for("pytorch")
    own = framework in OWN_RUNTIME
    if own:  # the site's PyTorch modules are no use to it and may shadow its libraries
        base = FrameworkSetup(module_use=base.module_use, env=base.env)
    kind = base.user_env or ("venv" if path and "/" in path else "conda")
    line = activation(kind, path) if path else _framework_stop_line(profile, framework, own)
    setup = base.model_copy(update={"setup": [*base.setup, line], "user_env": None})
    if path:
        where = "in place of the site's PyTorch set-up" if own else "after the site's PyTorch set-up"
        return _only(profile, setup), f"{profile.name} provides no {framework} set-up: the job activates your environment, {path}, {where}"
    return _only(profile, setup), (f"{profile.name} provides no {framework} set-up ({_what(framework, own)}): port again "
                                   f"with --python-env PATH naming an environment with {framework} there; as written "
                                   "the job stops at once")


def _what(framework: str, own: bool) -> str:
    return f"the program is {framework}, not PyTorch" if own else f"the program needs {framework} besides PyTorch"


def _only(profile: ClusterProfile, setup: FrameworkSetup) -> ClusterProfile:
    """The profile with `setup` in place of each framework's (a template renders its framework's)."""
    return profile.model_copy(update={"frameworks": {name: setup for name in profile.frameworks}})


def _framework_stop_line(profile: ClusterProfile, framework: str, own: bool) -> str:
    message = (f"maple-ci: {profile.display_name} provides no {framework} set-up ({_what(framework, own)}); port "
               "this job again with --python-env PATH naming your environment with it there. Stopping before the "
               "program runs under the site's PyTorch alone.")
    return f"echo {shell_word(message)} >&2; exit 1"


def program_check(program: Optional[str], source_env: Optional[str], profile: ClusterProfile,
                  contained: bool) -> tuple[Optional[str], list[str]]:
    """(the line that stops the job before the launch when its program is not a command there, the
    header note). A program that is a command of its own (a console script: `pythpc`,
    `anemoi-training`) comes from an environment, not from the launch: where the target's set-up does
    not put it on PATH, bash would end every rank with 127 and no word on why. Not for a .py file or a
    module (`program` None) nor in a container (the image brings its commands)."""
    if not program or contained:
        return None, []
    where = f" (the source environment had it: {source_env})" if source_env else ""
    message = (f"maple-ci: {program} is not a command on {profile.display_name} after the set-up of the job{where}; "
               "install it in your environment there (a console script of the checkout: pip install -e .) and "
               "port again with --python-env PATH. Stopping before the launch.")
    line = f"command -v {shell_word(program)} >/dev/null || {{ echo {shell_word(message)} >&2; exit 1; }}"
    return line, [f"the program {program} is a command of its own (a console script of an environment): the job "
                  "checks it is on PATH after the set-up and stops, saying so, when it is not"]


def given_checks(names: list[str]) -> list[str]:
    """The lines that stop the job when a variable the source's submitter set per submission is not
    given (bash's ${NAME:?word}: the message names it; the word holds no expansion)."""
    return [f': "${{{name}:?maple-ci: {name} is not set: the source set it per submission on its submit line '
            f'(an export of a loop value); give {name} when you submit this job, as the source did}}"'
            for name in names]
