"""What a verification job runs from the repository, and whether a maintainer approved that content.

A job runs the script under <output>/<cluster>/ and every file of the commit the script names in a
command: a per-rank wrapper a port kept (`./tools/bind.sh python ...`), an EDF (`--environment=`),
a file it sources. Whatever wrote them, merged or not: merging a fork's PR is not approving its
code for the center. So each such file is traced through git history (approval.fork_source: its
stamp, else the fork PR of any commit that changed it), and content that a fork commit touched
runs only when a maintainer approved a commit holding exactly that content: the same blob (git's
hash of the bytes) at the fork's head or at the commit being verified, approved with `/maple
approve <sha>`. A later edit, by anyone, is new content and needs a new approval.
"""

from __future__ import annotations

import base64
import re
import shlex
from typing import NamedTuple

from github.Repository import Repository

from maple_ci.github.approval import approver, fork_pr_source, stamped

# Where a word names a file of the checkout: the job runs from the commit's root (a copy of it).
_ROOT = re.compile(r"^(?:--[\w-]+=)?(?:\$\{?PWD\}?/|\$\{?SLURM_SUBMIT_DIR\}?/|\$\{?PBS_O_WORKDIR\}?/|\./)*")


class Held(NamedTuple):
    path: str  # the file that may not run
    blob: str  # its content's git hash at the commit verified
    fork: str  # the fork commit whose PR touched it


def blobs(repo: Repository, sha: str) -> dict[str, str]:
    """{path: blob hash} of every regular file of commit `sha`."""
    tree = repo.get_git_tree(repo.get_git_commit(sha).tree.sha, recursive=True)
    return {e.path: e.sha for e in tree.tree if e.type == "blob"}


def named_files(text: str, tree: dict[str, str], skip: set[str] = frozenset()) -> list[str]:
    """The files of `tree` that the script's commands name (comments are notes), in order; `skip`:
    files the job does not run (the training program, which the mini-app replaces)."""
    found: dict[str, None] = {}
    for line in text.splitlines():
        if line.lstrip().startswith("#") and not line.lstrip().startswith("#SBATCH"):
            continue
        for word in _words(line):
            path = _ROOT.sub("", word.strip("\"'"))
            if path in tree and path not in skip:
                found[path] = None
    return list(found)


def _words(line: str) -> list[str]:
    """The line's shell words, and the words inside each (`bash -c 'source x.sh; ...'`)."""
    try:
        words = shlex.split(line, comments=False)
    except ValueError:  # an unbalanced quote: plain words still name files
        words = line.split()
    return [part for word in words for part in {word, *re.split(r"[\s;&|()<>`]+", word)} if part]


def run_set(repo: Repository, sha: str, script: str, text: str, skip: set[str] = frozenset()) -> dict[str, str]:
    """{path: blob} of the script at `script` and of every file it names, at commit `sha`."""
    tree = blobs(repo, sha)
    return {path: tree[path] for path in [script, *named_files(text, tree, skip)] if path in tree}


class Approvals:
    """Who approved which commit, and the trees of approved commits, each asked once per request."""

    def __init__(self, repo: Repository, seen: dict[str, str | None]):
        self.repo, self.seen, self._trees = repo, seen, {}

    def approved(self, sha: str) -> bool:
        if sha not in self.seen:
            self.seen[sha] = approver(self.repo, sha)
        return self.seen[sha] is not None

    def holds(self, sha: str, path: str, blob: str) -> bool:
        """Whether approved commit `sha` holds exactly this content at `path`."""
        if not self.approved(sha):
            return False
        if sha not in self._trees:
            self._trees[sha] = blobs(self.repo, sha)
        return self._trees[sha].get(path) == blob


def held(approvals: Approvals, sha: str, script: str, text: str, files: dict[str, str]) -> list[Held]:
    """The files of a run at commit `sha` that no approval covers: a port stamped from a fork commit
    no one approved (the bot generated it from that commit), and any file a fork's PR touched whose
    exact blob no approved commit holds (neither the fork's head nor `sha` itself). A stamp never
    stands in for history: a fork can write one."""
    out = []
    stamp = stamped(text)
    if stamp is not None and stamp[0] != approvals.repo.full_name and not approvals.approved(stamp[1]):
        out.append(Held(script, files.get(script, ""), stamp[1]))
    for path, blob in files.items():
        source = fork_pr_source(approvals.repo, path, sha, "")
        if source is not None and not any(approvals.holds(c, path, blob) for c in (source.commit, sha)):
            out.append(Held(path, blob, source.commit))
    return out


def held_note(files: list[Held], sha: str) -> str:
    """Why a script waits: the files a fork touched, and the approval that would let them run."""
    shown = ", ".join(f"`{h.path}` (blob `{h.blob[:12]}`, from fork commit `{h.fork[:12]}`)" for h in files)
    return (f"Verification waits for a maintainer's approval: a fork's commit wrote what this job would run: {shown}. "
            f"A maintainer who reviewed this content comments `/maple approve {sha}`.")


def listing(repo: Repository, sha: str, output: str) -> str:
    """What verification at `sha` runs, for the approval's reply: each script under the output folder
    and each file one names, with its blob hash."""
    tree = blobs(repo, sha)
    files: dict[str, str] = {}
    for path in sorted(p for p in tree if p.startswith(output.rstrip("/") + "/")):
        text = base64.b64decode(repo.get_git_blob(tree[path]).content).decode(errors="replace")
        files |= {path: tree[path]} | {p: tree[p] for p in named_files(text, tree)}
    if not files:
        return f"No file under `{output}/` at `{sha}`: nothing of that commit runs as it stands."
    return "Verification of that commit runs exactly these files:\n" + "\n".join(
        f"- `{path}` blob `{blob}`" for path, blob in files.items())
