"""The center's side of git: fetch the commit a request names from the branches it may come from,
read the committed script, and copy the commit out of the runner's checkout before anything of it runs."""

import os
import re
import shutil
import stat
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

MAX_SCRIPT_BYTES = 256 * 1024
PORT_BRANCHES = "maple/port-*"  # the bot's: trusted for a commit the bot signed (maple_ci/attestation.py)
# A URL with user:token@ or an Authorization header: what GitLab Runner before 18.0 wrote into the
# checkout's .git/config (its job token), and what any program the job starts could read there.
_CREDENTIALS = re.compile(r"://[^/\s@]+@|^http\..*extraheader=.*authorization", re.IGNORECASE | re.MULTILINE)


class Refused(Exception):
    pass


def git(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    # A scrubbed environment and no hooks: git runs only what the runner's own .git/config says.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/"), "LC_ALL": "C",
           "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], env=env, check=check,
                          capture_output=True, text=True)


def site_startup_file(value: str) -> bool:
    """Whether a BASH_ENV/ENV value is a startup file the site's administrators own: a request can
    name such a file too, but cannot write one, so nothing of its choosing runs."""
    if not re.fullmatch(r"/[A-Za-z0-9_./+-]*", value):  # nothing bash would expand
        return False
    real = Path(os.path.realpath(value))  # e.g. Lmod's versioned install behind a `lmod` link
    return real.is_file() and root_only(Path(value)) and root_only(real)


def root_only(path: Path) -> bool:
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


def refuse_stored_credentials() -> None:
    """The checkout's own git configuration must not hold a credential: the ported script runs as
    the pipeline's owner and could read it (GitLab Runner 18.0 keeps the job token out of it)."""
    config = git("config", "--local", "--list", check=False).stdout
    if _CREDENTIALS.search(config):
        raise Refused("the runner's checkout stores a credential in .git/config (a URL with a token or an "
                      "Authorization header): use GitLab Runner 18.0 or later (workflows/gitlab/README.md)")


def fetch_commit(commit: str, default_branch: str, protected: list[str], wait: float, ports: bool = False) -> None:
    """Fetch the branches a verified commit may come from (a mirror may lag: retry), then require
    the commit to be reachable from one of them. `ports`: the bot signed the request, so its
    maple/port-* branches count too; their names alone are no reason to trust them (anyone who can
    push a branch can name one so)."""
    trusted = [default_branch, *protected]
    refspecs = [f"+refs/heads/{name}:refs/remotes/origin/{name}" for name in [*trusted, *([PORT_BRANCHES] * ports)]]
    deadline = time.monotonic() + wait
    while True:
        git("fetch", "--quiet", "--no-tags", "origin", *refspecs, check=False)
        if git("cat-file", "-e", f"{commit}^{{commit}}", check=False).returncode == 0:
            break
        if time.monotonic() >= deadline:
            raise Refused(f"commit {commit} is not in the mirror (waited {wait:.0f} s)")
        time.sleep(min(30.0, max(deadline - time.monotonic(), 0.1)))
    signed = git("for-each-ref", "--format=%(refname)", f"refs/remotes/origin/{PORT_BRANCHES}").stdout.split() if ports else []
    refs = [f"refs/remotes/origin/{name}" for name in trusted] + signed
    if not any(git("merge-base", "--is-ancestor", commit, ref, check=False).returncode == 0 for ref in refs):
        raise Refused(f"commit {commit} is on no protected branch ({' '.join(trusted)})"
                      + (f" and no {PORT_BRANCHES} branch" if ports else f"; a {PORT_BRANCHES} branch counts only "
                         "for a request the bot signed (attestation)"))


def read_script(commit: str, script: str) -> str:
    """The committed script, from git itself: a regular file (no symlink) of bounded size."""
    listed = git("ls-tree", "-l", commit, "--", script).stdout.split()
    if not listed or listed[0] not in ("100644", "100755") or listed[1] != "blob":
        raise Refused(f"{script} is not a regular file in commit {commit}")
    if int(listed[3]) > MAX_SCRIPT_BYTES:
        raise Refused(f"{script} is larger than {MAX_SCRIPT_BYTES} bytes")
    return git("cat-file", "blob", f"{commit}:{script}").stdout


def scratch_copy(commit: str, parent: Path) -> Path:
    """The commit's files, without .git, in a new folder beside the runner's checkout (the builds
    folder is on the file system the compute nodes share): the job runs there, so nothing it
    starts finds the runner's git configuration. Symlinks are not copied."""
    scratch = Path(tempfile.mkdtemp(prefix="maple-scratch-", dir=parent))
    archive = scratch / ".commit.tar"
    git("archive", "--format=tar", f"--output={archive}", commit)
    with tarfile.open(archive) as tar:
        tar.extractall(scratch, members=[m for m in tar.getmembers() if m.isfile() or m.isdir()], filter="data")
    archive.unlink()
    return scratch


def remove(scratch: Path) -> None:
    shutil.rmtree(scratch, ignore_errors=True)
