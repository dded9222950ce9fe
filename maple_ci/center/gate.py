"""`python -I -m maple_ci.center check|verify --settings F --cluster C --script S --miniapp M --commit SHA
[--attestation SIG]`: the center-side gate of maple-ci's jacamar verification
(workflows/gitlab/maple-verify.gitlab-ci.yml).

The five values are the pipeline's typed inputs (GitLab `spec:inputs`, checked by GitLab against
their regex or options before the pipeline exists), written into the command line by the CI file.
The gate checks them again, refuses every environment variable it does not expect (a trigger that
may still set variables could otherwise set LMOD_SETTARG_CMD or GIT_CONFIG_*), reads its own
settings from a file only root can change (center/settings.py), fetches the commit from a trusted
branch (or, signed by the bot, from its maple/port-* branches: maple_ci/attestation.py), refuses
any container form maple-ci does not write for the cluster (center/images.py), and derives the
scheduler options from the committed script, capped by the site. `check` (the login-node job) writes them as SCHEDULER_PARAMETERS to --dotenv; `verify` (the
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

from maple_ci.attestation import signed_by
from maple_ci.center.checkout import (Refused, fetch_commit, read_script, refuse_stored_credentials, remove,
                                      scratch_copy, site_startup_file)
from maple_ci.center.images import refuse_unlisted_image
from maple_ci.center.options import scheduler_parameters
from maple_ci.center.settings import DEFAULT_PATH, Settings, load_settings
from maple_ci.paths import miniapps_dir
from maple_ci.profiles import get_profile
from maple_ci.verify.jobenv import job_environment

# A login shell's own variables, and the id_token the CI file asks for (Jacamar identifies the user by it).
LOGIN = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD", "SHLVL", "_", "LANG", "LANGUAGE", "TERM", "TZ",
         "HOSTNAME", "TMPDIR", "MAIL", "SITE_ID_TOKEN"}
# GitLab's predefined variables and Jacamar CI's (https://docs.gitlab.com/ci/variables/predefined_variables/,
# https://ecp-ci.gitlab.io/docs/admin/jacamar/configuration.html, read 2026-11-25)
GITLAB_FAMILIES = ("CI_", "GITLAB_", "JACAMAR_CI_")
SITE_STARTUP = {"BASH_ENV", "ENV"}  # only a root-only file of the site (checkout.site_startup_file)
# A locale's name: Python itself sets LC_CTYPE=C.UTF-8 in its own environment when LANG names no
# usable locale (PEP 538), so a job environment without LANG reaches the gate with one.
_LOCALE = re.compile(r"LC_[A-Z]+")
_LOCALE_NAME = re.compile(r"[A-Za-z0-9_.@-]*")


def _unexpected(name: str, value: str, batch: bool, site: set) -> Optional[str]:
    """Why the variable `name` may not be set, or None when the gate expects it."""
    if name in SITE_STARTUP:
        return None if site_startup_file(value) else f"{name} is set and is not a startup file only root can change"
    if name == "SCHEDULER_PARAMETERS":
        return None if batch else "SCHEDULER_PARAMETERS is set; the center derives them from the committed script"
    if name in LOGIN | site or name.startswith(GITLAB_FAMILIES) or (batch and job_environment({name: value})):
        return None
    if _LOCALE.fullmatch(name) and _LOCALE_NAME.fullmatch(value):
        return None
    return f"{name} is set; the center expects no such variable (a site's own: site_variables in its settings)"


def unexpected_variables(env: dict, batch: bool, site: set) -> list[str]:
    """Every variable the gate does not expect, each with why: an allowlist, since the names that
    make a shell, Lmod, git or a loader run something cannot all be listed. `site`: the names the
    center's settings list as its own (never a variable's: a trigger could set that too)."""
    problems = [why for name in sorted(env) if (why := _unexpected(name, env[name], batch, site))]
    checkout = Path.cwd().resolve()
    for entry in env.get("PATH", "").split(":"):
        if not entry.startswith("/") or Path(os.path.realpath(entry)).is_relative_to(checkout):
            problems.append(f"PATH has {entry!r}, which is relative or in the checkout")
    return problems


def check_inputs(args, settings: Settings) -> list[str]:
    """What is wrong with the typed inputs, checked again here whatever GitLab checked."""
    miniapps = sorted(p.stem for p in miniapps_dir().glob("*.py") if not p.stem.startswith("_"))
    problems = _cluster_problems(args.cluster, list(settings.clusters))
    if args.miniapp not in miniapps:
        problems.append(f"miniapp {args.miniapp!r} is not one of {', '.join(miniapps)}")
    if not re.fullmatch(r"[0-9a-f]{40}", args.commit):
        problems.append(f"commit {args.commit!r} is not a full commit id (40 hex digits)")
    if not _in_cluster_scripts(args.script, args.cluster):
        problems.append(f"script {args.script!r} is not scripts/{args.cluster or '<cluster>'}/<file name>")
    return problems


def _cluster_problems(cluster: str, clusters: list[str]) -> list[str]:
    if not clusters:
        return ["the center's settings name no clusters (clusters: the runner tags it verifies on)"]
    if cluster not in clusters:
        return [f"cluster {cluster!r} is not one of this center's clusters: {' '.join(clusters)}"]
    return []


def _in_cluster_scripts(script: str, cluster: str) -> bool:
    """Whether the script is a plain file name directly under scripts/<cluster>/."""
    return bool(re.fullmatch(rf"scripts/{re.escape(cluster)}/[A-Za-z0-9_][A-Za-z0-9_.-]*", script)) and ".." not in script


def _signed(args, settings: Settings) -> bool:
    """Whether the request carries the bot's signature of its commit and script; a signature that
    does not verify is refused, not ignored (it says someone tried)."""
    if not args.attestation:
        return False
    if not signed_by(args.attestation, args.commit, args.script, settings.bot_keys):
        raise Refused("the request's attestation is not the bot's signature of this commit and script "
                      "(bot_keys in the center's settings)")
    return True


def _parameters(args, env: dict, settings: Settings) -> str:
    """The request checked end to end, the commit fetched; the scheduler options it gets."""
    problems = check_inputs(args, settings) + unexpected_variables(env, args.mode == "verify", set(settings.site_variables))
    if problems:
        raise Refused("\n  ".join(problems))
    refuse_stored_credentials()
    fetch_commit(args.commit, env.get("CI_DEFAULT_BRANCH") or "main", list(settings.protected_refs),
                 settings.fetch_wait_seconds, ports=_signed(args, settings))
    text = read_script(args.commit, args.script)
    refuse_unlisted_image(text, get_profile(args.cluster))
    parameters, dropped = scheduler_parameters(text, settings.max_nodes, settings.max_minutes,
                                               settings.site_scheduler_options, get_profile(args.cluster).scheduler)
    if dropped:
        print(f"maple-center-check: options of {args.script} left to the site: {' '.join(dropped)}")
    print(f"maple-center-check: {args.script} at {args.commit}, SCHEDULER_PARAMETERS={parameters}", flush=True)
    return parameters


def _verify(args, env: dict, settings: Settings) -> int:
    """The mini-app through the committed script, inside this job's allocation, from a copy of the commit."""
    from maple_ci.verify.local import verify_local

    scratch = scratch_copy(args.commit, Path.cwd().resolve().parent)
    try:
        result = verify_local(scratch / args.script, miniapp=args.miniapp, env=env, workdir=scratch,
                              in_allocation=True, timeout=settings.max_minutes * 60)
    finally:
        remove(scratch)
    print(f"maple-center-check: {'passed' if result.ok else 'failed'} ({result.state}): {result.message}")
    return 0 if result.ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="maple-center-check", description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("check", "verify"))
    for name in ("cluster", "script", "miniapp", "commit"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--attestation", default="", help="the bot's signature of commit and script (maple_ci.attestation)")
    parser.add_argument("--settings", type=Path, default=DEFAULT_PATH, help="the center's settings, a file only root can change")
    parser.add_argument("--dotenv", type=Path, help="check: write SCHEDULER_PARAMETERS here (a GitLab dotenv report)")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    try:
        settings = load_settings(args.settings)
        parameters = _parameters(args, env, settings)
        if args.mode == "verify" and env.get("SCHEDULER_PARAMETERS", "") != parameters:
            raise Refused(f"the job was submitted with {env.get('SCHEDULER_PARAMETERS', '')!r}, not {parameters!r}")
    except (Refused, ValueError) as exc:
        print(f"maple-center-check: refused:\n  {exc}", file=sys.stderr)
        return 1
    if args.dotenv:
        args.dotenv.write_text(f"SCHEDULER_PARAMETERS={parameters}\n")
    return _verify(args, env, settings) if args.mode == "verify" else 0
