"""`python -I -m maple_ci.center check|verify --cluster C --script S --miniapp M --commit SHA`:
the center-side gate of maple-ci's jacamar verification (workflows/gitlab/maple-verify.gitlab-ci.yml).

The four values are the pipeline's typed inputs (GitLab `spec:inputs`, checked by GitLab against
their regex or options before the pipeline exists), written into the command line by the CI file.
The gate checks them again, refuses every environment variable it does not expect (a trigger that
may still set variables could otherwise set LMOD_SETTARG_CMD or GIT_CONFIG_*), fetches the commit
from a trusted branch, and derives the scheduler options from the committed script, capped by the
site. `check` (the login-node job) writes them as SCHEDULER_PARAMETERS to --dotenv; `verify` (the
batch job) requires the job to run with exactly those, then runs the mini-app through the script
from a copy of the commit outside the runner's checkout, under `env -i` plus an allowlist
(maple_ci.verify.jobenv). Exit 1 with the reasons on a refusal; nothing else is changed.
"""

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Optional

from maple_ci.center.checkout import (Refused, fetch_commit, read_script, refuse_stored_credentials, remove,
                                      scratch_copy, site_startup_file)
from maple_ci import schedulers
from maple_ci.center.options import scheduler_parameters
from maple_ci.paths import miniapps_dir
from maple_ci.profiles import get_profile
from maple_ci.verify.jobenv import job_environment

# The center's settings (CI/CD variables of its project, workflows/gitlab/README.md).
SETTINGS = {"MAPLE_CI_VENV", "MAPLE_CLUSTERS", "MAPLE_MAX_NODES", "MAPLE_MAX_MINUTES", "MAPLE_SITE_SCHEDULER_OPTIONS",
            "MAPLE_PROTECTED_REFS", "MAPLE_FETCH_WAIT_SECONDS", "MAPLE_SITE_VARIABLES"}
# A login shell's own variables, and the id_token the CI file asks for (Jacamar identifies the user by it).
LOGIN = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD", "SHLVL", "_", "LANG", "LANGUAGE", "TERM", "TZ",
         "HOSTNAME", "TMPDIR", "MAIL", "SITE_ID_TOKEN"}
# GitLab's predefined variables and Jacamar CI's (https://docs.gitlab.com/ci/variables/predefined_variables/,
# https://ecp-ci.gitlab.io/docs/admin/jacamar/configuration.html, read 2026-11-25)
GITLAB_FAMILIES = ("CI_", "GITLAB_", "JACAMAR_CI_")
SITE_STARTUP = {"BASH_ENV", "ENV"}  # only a root-only file of the site (checkout.site_startup_file)


def _unexpected(name: str, value: str, batch: bool, site: set) -> Optional[str]:
    """Why the variable `name` may not be set, or None when the gate expects it."""
    if name in SITE_STARTUP:
        return None if site_startup_file(value) else f"{name} is set and is not a startup file only root can change"
    if name == "SCHEDULER_PARAMETERS":
        return None if batch else "SCHEDULER_PARAMETERS is set; the center derives them from the committed script"
    if name in SETTINGS | LOGIN | site or name.startswith(GITLAB_FAMILIES) or (batch and job_environment({name: value})):
        return None
    return f"{name} is set; the center expects no such variable (a site's own: MAPLE_SITE_VARIABLES)"


def unexpected_variables(env: dict, batch: bool) -> list[str]:
    """Every variable the gate does not expect, each with why: an allowlist, since the names that
    make a shell, Lmod, git or a loader run something cannot all be listed."""
    site = set(env.get("MAPLE_SITE_VARIABLES", "").split())
    problems = [why for name in sorted(env) if (why := _unexpected(name, env[name], batch, site))]
    checkout = Path.cwd().resolve()
    for entry in env.get("PATH", "").split(":"):
        if not entry.startswith("/") or Path(os.path.realpath(entry)).is_relative_to(checkout):
            problems.append(f"PATH has {entry!r}, which is relative or in the checkout")
    return problems


def check_inputs(args, env: dict) -> list[str]:
    """What is wrong with the typed inputs, checked again here whatever GitLab checked."""
    miniapps = sorted(p.stem for p in miniapps_dir().glob("*.py") if not p.stem.startswith("_"))
    problems = _cluster_problems(args.cluster, env.get("MAPLE_CLUSTERS", "").split())
    if args.miniapp not in miniapps:
        problems.append(f"miniapp {args.miniapp!r} is not one of {', '.join(miniapps)}")
    if not re.fullmatch(r"[0-9a-f]{40}", args.commit):
        problems.append(f"commit {args.commit!r} is not a full commit id (40 hex digits)")
    if not _in_cluster_scripts(args.script, args.cluster):
        problems.append(f"script {args.script!r} is not scripts/{args.cluster or '<cluster>'}/<file name>")
    return problems


def _cluster_problems(cluster: str, clusters: list[str]) -> list[str]:
    if not clusters:
        return ["the center has not set MAPLE_CLUSTERS (the clusters its runners verify on)"]
    if cluster not in clusters:
        return [f"cluster {cluster!r} is not one of this center's clusters: {' '.join(clusters)}"]
    return []


def _in_cluster_scripts(script: str, cluster: str) -> bool:
    """Whether the script is a plain file name directly under scripts/<cluster>/."""
    return bool(re.fullmatch(rf"scripts/{re.escape(cluster)}/[A-Za-z0-9_][A-Za-z0-9_.-]*", script)) and ".." not in script


# A container runtime in a command or a directive (comments are the port's notes): the image decides
# what runs, so it must be one the cluster's profile allows, pinned by digest (containers.allowed).
_RUNTIME = re.compile(r"\b(apptainer|singularity|shifter|podman-hpc|enroot)\b|--container-image")


def _commands(text: str) -> str:
    """The script's commands and directives, without its comments."""
    prefixes = tuple(unit.prefix for unit in schedulers.all())
    return "\n".join(line for line in text.splitlines()
                     if not line.lstrip().startswith("#") or line.lstrip().startswith(prefixes))


def refuse_unlisted_image(text: str, cluster: str) -> None:
    """Refused unless every container the script runs is on the cluster's allowlist."""
    from maple_ci.containers import allowed
    from maple_ci.errors import MapleError
    from maple_ci.extract import extract_script

    try:
        container = extract_script(text).container
        image = container.image if container else None
        if image and allowed(image, get_profile(cluster)):
            return
    except MapleError as exc:
        raise Refused(f"the script cannot be read: {exc}") from exc
    if container or _RUNTIME.search(_commands(text)):
        raise Refused(f"the script runs a container image ({image or 'not readable'}) that is not on {cluster}'s "
                      "list of allowed images pinned by digest")


def _parameters(args, env: dict) -> str:
    """The request checked end to end, the commit fetched; the scheduler options it gets."""
    problems = check_inputs(args, env) + unexpected_variables(env, batch=args.mode == "verify")
    if problems:
        raise Refused("\n  ".join(problems))
    refuse_stored_credentials()
    fetch_commit(args.commit, env.get("CI_DEFAULT_BRANCH") or "main", env.get("MAPLE_PROTECTED_REFS", "").split(),
                 float(env.get("MAPLE_FETCH_WAIT_SECONDS", "180")))
    text = read_script(args.commit, args.script)
    refuse_unlisted_image(text, args.cluster)
    parameters, dropped = scheduler_parameters(text,
                                               int(env.get("MAPLE_MAX_NODES", "2")),
                                               int(env.get("MAPLE_MAX_MINUTES", "30")),
                                               env.get("MAPLE_SITE_SCHEDULER_OPTIONS", ""),
                                               get_profile(args.cluster).scheduler)
    if dropped:
        print(f"maple-center-check: options of {args.script} left to the site: {' '.join(dropped)}")
    print(f"maple-center-check: {args.script} at {args.commit}, SCHEDULER_PARAMETERS={parameters}", flush=True)
    return parameters


def _verify(args, env: dict) -> int:
    """The mini-app through the committed script, inside this job's allocation, from a copy of the commit."""
    from maple_ci.verify.local import verify_local

    scratch = scratch_copy(args.commit, Path.cwd().resolve().parent)
    try:
        result = verify_local(scratch / args.script, miniapp=args.miniapp, env=env, workdir=scratch,
                              in_allocation=True, timeout=int(env.get("MAPLE_MAX_MINUTES", "30")) * 60)
    finally:
        remove(scratch)
    print(f"maple-center-check: {'passed' if result.ok else 'failed'} ({result.state}): {result.message}")
    return 0 if result.ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="maple-center-check", description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("check", "verify"))
    for name in ("cluster", "script", "miniapp", "commit"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--dotenv", type=Path, help="check: write SCHEDULER_PARAMETERS here (a GitLab dotenv report)")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    try:
        parameters = _parameters(args, env)
        if args.mode == "verify" and env.get("SCHEDULER_PARAMETERS", "") != parameters:
            raise Refused(f"the job was submitted with {env.get('SCHEDULER_PARAMETERS', '')!r}, not {parameters!r}")
    except (Refused, ValueError) as exc:
        print(f"maple-center-check: refused:\n  {exc}", file=sys.stderr)
        return 1
    if args.dotenv:
        args.dotenv.write_text(f"SCHEDULER_PARAMETERS={parameters}\n")
    return _verify(args, env) if args.mode == "verify" else 0
