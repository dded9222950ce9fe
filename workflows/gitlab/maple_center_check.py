"""Center-side gate of maple-ci's jacamar verification (workflows/gitlab/maple-verify.gitlab-ci.yml).

A pipeline trigger can carry any variable with any value, so before anything runs this checks the
request against what the bot may send and what the center allows, checks out the commit, and
derives the scheduler options from the committed script itself, capped by the site:

  MAPLE_COMMIT    40 hex digits, reachable from the default branch, MAPLE_PROTECTED_REFS or a
                  maple/port-* branch of the mirror
  MAPLE_SCRIPT    scripts/<MAPLE_CLUSTER>/<name>: a regular file in that commit (no `..`, no
                  absolute path, no symlink anywhere on the way)
  MAPLE_CLUSTER   one of the site's MAPLE_CLUSTERS;   MAPLE_MINIAPP  one of maple-ci's mini-apps
  nothing that changes how a shell, the dynamic loader, Python or git start (BASH_ENV, LD_PRELOAD, ...),
                  except a BASH_ENV or ENV that names a startup file of the site itself (Lmod sets
                  BASH_ENV so that batch shells have `module`): a plain absolute path to a regular
                  file that root owns and only root can change, nor any directory on its way

Run it with the center's maple-ci interpreter in isolated mode, from outside the checkout:
    "$MAPLE_CI_VENV/bin/python" -I "$MAPLE_CI_VENV/bin/maple-center-check" [--dotenv FILE]
The working directory is the job's checkout. With --dotenv (the first job) the derived options are
written there as SCHEDULER_PARAMETERS for the batch job, and a trigger must not set them; without
it (the batch job) the options the job was submitted with must equal the derived ones. Exit 1 with
the reasons on a refusal; nothing else is changed.
"""

import argparse
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

from maple_ci.extract import pbs_walltime, slurm_walltime
from maple_ci.paths import miniapps_dir

# Names that make a shell, the loader, Python or git run something of the caller's choosing.
REFUSED = {"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "LD_PRELOAD", "LD_AUDIT",
           "PYTHONSTARTUP", "PYTHONINSPECT", "PERL5OPT", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_PROXY_COMMAND",
           "GIT_ASKPASS", "GIT_EXEC_PATH", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_EXTERNAL_DIFF",
           "GIT_DIR", "GIT_WORK_TREE"}
SITE_STARTUP = {"BASH_ENV", "ENV"}  # refused unless they name a file of the site (site_startup_file)
PLAIN_PATH = re.compile(r"/[A-Za-z0-9_./+-]*")  # nothing bash would expand when it reads BASH_ENV
SAFE_VALUE = re.compile(r"[A-Za-z0-9_.,:=+-]+")  # no spaces, quotes or paths in a scheduler option
MAX_SCRIPT_BYTES = 256 * 1024
# Slurm options taken from the script (aliases -> long name); everything else is dropped.
SLURM_KEPT = {"-N": "nodes", "-t": "time", "-n": "ntasks", "-c": "cpus-per-task", "-G": "gpus", "-C": "constraint",
              "-p": "partition", "-J": "job-name", **{name: name for name in (
                  "nodes", "time", "ntasks", "ntasks-per-node", "cpus-per-task", "gpus", "gpus-per-node",
                  "gpus-per-task", "gres", "constraint", "partition", "job-name", "gpu-bind", "exclusive")}}
SLURM_FLAGS = {"exclusive"}
PBS_KEPT_RESOURCES = {"select", "walltime", "place", "filesystems"}


class Refused(Exception):
    pass


def git(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    # A scrubbed environment and no hooks: git runs only what the runner's own .git/config says.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/"), "LC_ALL": "C",
           "GIT_TERMINAL_PROMPT": "0"}
    return subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], env=env, check=check,
                          capture_output=True, text=True)


def site_startup_file(value: str) -> bool:
    """Whether a BASH_ENV/ENV value is a startup file the site's administrators own: a request can
    name such a file too, but cannot write one, so nothing of its choosing runs."""
    if not PLAIN_PATH.fullmatch(value):
        return False
    real = Path(os.path.realpath(value))  # e.g. Lmod's versioned install behind a `lmod` link
    return real.is_file() and _root_only(Path(value)) and _root_only(real)


def _root_only(path: Path) -> bool:
    """Root owns the path and every directory above it, and no one else can write them (a link's
    own mode means nothing: its target is checked on its own)."""
    for part in (path, *path.parents):
        try:
            info = part.lstat()
        except OSError:
            return False
        if info.st_uid != 0 or (info.st_mode & 0o022 and not stat.S_ISLNK(info.st_mode)):
            return False
    return True


def check_request(env: dict) -> list[str]:
    """What is wrong with the request's variables, before anything touches the checkout."""
    problems = [f"{name} is set; a request may not change how programs start" for name in sorted(REFUSED & set(env))
                if not (name in SITE_STARTUP and site_startup_file(env[name]))]
    clusters = env.get("MAPLE_CLUSTERS", "").split()
    cluster, script = env.get("MAPLE_CLUSTER", ""), env.get("MAPLE_SCRIPT", "")
    miniapps = sorted(p.stem for p in miniapps_dir().glob("*.py") if not p.stem.startswith("_"))
    if not clusters:
        problems.append("the center has not set MAPLE_CLUSTERS (the clusters its runners verify on)")
    elif cluster not in clusters:
        problems.append(f"MAPLE_CLUSTER {cluster!r} is not one of this center's clusters: {' '.join(clusters)}")
    if env.get("MAPLE_MINIAPP", "") not in miniapps:
        problems.append(f"MAPLE_MINIAPP {env.get('MAPLE_MINIAPP', '')!r} is not one of {', '.join(miniapps)}")
    if not re.fullmatch(r"[0-9a-f]{40}", env.get("MAPLE_COMMIT", "")):
        problems.append(f"MAPLE_COMMIT {env.get('MAPLE_COMMIT', '')!r} is not a full commit id (40 hex digits)")
    if not re.fullmatch(rf"scripts/{re.escape(cluster)}/[A-Za-z0-9_][A-Za-z0-9_.-]*", script) or ".." in script:
        problems.append(f"MAPLE_SCRIPT {script!r} is not scripts/{cluster or '<cluster>'}/<file name>")
    return problems


def fetch_commit(commit: str, default_branch: str, protected: list[str], wait: float) -> None:
    """Fetch the branches a verified commit may come from (a mirror may lag: retry), then require
    the commit to be reachable from one of them."""
    trusted = [default_branch, *protected]
    refspecs = [f"+refs/heads/{name}:refs/remotes/origin/{name}" for name in trusted]
    refspecs.append("+refs/heads/maple/port-*:refs/remotes/origin/maple/port-*")
    deadline = time.monotonic() + wait
    while True:
        git("fetch", "--quiet", "--no-tags", "origin", *refspecs, check=False)
        if git("cat-file", "-e", f"{commit}^{{commit}}", check=False).returncode == 0:
            break
        if time.monotonic() >= deadline:
            raise Refused(f"commit {commit} is not in the mirror (waited {wait:.0f} s)")
        time.sleep(min(30.0, max(deadline - time.monotonic(), 0.1)))
    ports = git("for-each-ref", "--format=%(refname)", "refs/remotes/origin/maple/port-*").stdout.split()
    refs = [f"refs/remotes/origin/{name}" for name in trusted] + ports
    if not any(git("merge-base", "--is-ancestor", commit, ref, check=False).returncode == 0 for ref in refs):
        raise Refused(f"commit {commit} is on no protected branch ({' '.join(trusted)}) and no maple/port-* branch")


def read_script(commit: str, script: str) -> str:
    """The committed script, checked out at HEAD: a regular file in git and on disk, no symlink on the way."""
    listed = git("ls-tree", commit, "--", script).stdout.split()
    if not listed or listed[0] not in ("100644", "100755"):
        raise Refused(f"{script} is not a regular file in commit {commit}")
    git("checkout", "--quiet", "--force", "--detach", commit)
    root = Path.cwd().resolve()
    for depth in range(1, len(Path(script).parts) + 1):
        part = root.joinpath(*Path(script).parts[:depth])
        if part.is_symlink():
            raise Refused(f"{part.relative_to(root)} is a symlink")
    path = root / script
    if not path.resolve().is_relative_to(root) or not path.is_file() or path.stat().st_size > MAX_SCRIPT_BYTES:
        raise Refused(f"{script} is not a regular file of at most {MAX_SCRIPT_BYTES} bytes in the checkout")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _directives(text: str) -> tuple[str, list[str]]:
    """The scheduler ('slurm' or 'pbs') and the words of its directives before the first command."""
    kind, words = "slurm", []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("#SBATCH", "#PBS")):
            kind = "slurm" if stripped.startswith("#SBATCH") else "pbs"
            words += stripped.split("#", 2)[1].split()[1:]  # drop the prefix and any trailing comment
        elif stripped and not stripped.startswith("#"):
            break  # like sbatch and qsub, directives after the first command are ignored
    return kind, words


def _option_pairs(words: list[str]):
    """(name, value) for `--name=value`, `--name value`, `-X value` and `-Xvalue`; value None for a flag."""
    words = list(words)
    while words:
        word = words.pop(0)
        if word.startswith("--"):
            name, _, value = word[2:].partition("=")
            if not value and name not in SLURM_FLAGS and words and not words[0].startswith("-"):
                value = words.pop(0)
            yield name, value or None
        elif word.startswith("-") and len(word) >= 2:
            value = word[2:] or (words.pop(0) if words and not words[0].startswith("-") else None)
            yield word[:2], value


def _first_number(value: str) -> int:
    match = re.match(r"\d+", value or "")
    return int(match[0]) if match else 1


def scheduler_parameters(text: str, max_nodes: int, max_minutes: int, site_options: str) -> tuple[str, list[str]]:
    """SCHEDULER_PARAMETERS from the script's directives: only options that shape the allocation,
    nodes and time capped, then the site's own options (account, QOS); and what was dropped."""
    kind, words = _directives(text)
    cap_seconds, kept, dropped = max_minutes * 60, [], []
    nodes, seconds, select = 1, cap_seconds, ""
    for name, value in _option_pairs(words):
        if kind == "pbs" and name == "-l" and value:
            for resource in value.split(","):
                key, _, amount = resource.partition("=")
                if key == "select" and SAFE_VALUE.fullmatch(amount):
                    nodes, chunk = _first_number(amount), amount.partition(":")[2]
                    select = ":" + chunk if chunk else ""
                elif key == "walltime":
                    seconds = _seconds(pbs_walltime, amount, cap_seconds)
                elif key in PBS_KEPT_RESOURCES and SAFE_VALUE.fullmatch(amount):
                    kept.append(resource)
                else:
                    dropped.append(f"-l {key}")
            continue
        long = SLURM_KEPT.get(name) if kind == "slurm" else None
        if long == "nodes":
            nodes = _first_number(value)
        elif long == "time":
            seconds = _seconds(slurm_walltime, value, cap_seconds)
        elif long in SLURM_FLAGS and value is None:
            kept.append(f"--{long}")
        elif long and value and SAFE_VALUE.fullmatch(value):
            kept.append(f"--{long}={value}")
        else:
            dropped.append(name if name.startswith("-") else f"--{name}")
    seconds = min(seconds, cap_seconds)
    walltime = f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
    if kind == "pbs":
        kept = [f"-l select={min(nodes, max_nodes)}{select}", f"-l walltime={walltime}", *(f"-l {r}" for r in kept)]
    else:
        kept[:0] = [f"--nodes={min(nodes, max_nodes)}", f"--time={walltime}"]
    return " ".join([*kept, *site_options.split()]), dropped


def _seconds(parse, value: str, unlimited: int) -> int:
    try:
        walltime = parse(value or "")
    except ValueError:
        return unlimited
    if walltime is None:
        return unlimited
    hours, minutes, seconds = (int(part) for part in walltime.split(":"))
    return hours * 3600 + minutes * 60 + seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="maple-center-check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dotenv", type=Path, help="write SCHEDULER_PARAMETERS here (a GitLab dotenv report)")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    try:
        problems = check_request(env)
        if args.dotenv and env.get("SCHEDULER_PARAMETERS"):
            problems.append("SCHEDULER_PARAMETERS is set; the center derives them from the committed script")
        if problems:
            raise Refused("\n  ".join(problems))
        commit, script = env["MAPLE_COMMIT"], env["MAPLE_SCRIPT"]
        fetch_commit(commit, env.get("CI_DEFAULT_BRANCH") or "main", env.get("MAPLE_PROTECTED_REFS", "").split(),
                     float(env.get("MAPLE_FETCH_WAIT_SECONDS", "180")))
        text = read_script(commit, script)
        parameters, dropped = scheduler_parameters(text, int(env.get("MAPLE_MAX_NODES", "2")),
                                                   int(env.get("MAPLE_MAX_MINUTES", "30")),
                                                   env.get("MAPLE_SITE_SCHEDULER_OPTIONS", ""))
        if not args.dotenv and env.get("SCHEDULER_PARAMETERS", "") != parameters:
            raise Refused(f"the job was submitted with {env.get('SCHEDULER_PARAMETERS', '')!r}, not {parameters!r}")
    except (Refused, ValueError) as exc:
        print(f"maple-center-check: refused:\n  {exc}", file=sys.stderr)
        return 1
    if dropped:
        print(f"maple-center-check: options of {script} left to the site: {' '.join(dropped)}")
    print(f"maple-center-check: {script} at {commit}, SCHEDULER_PARAMETERS={parameters}")
    if args.dotenv:
        args.dotenv.write_text(f"SCHEDULER_PARAMETERS={parameters}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
