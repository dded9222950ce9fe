"""Where a traced script runs: its own commands are untrusted code, so they run only here.

- a copy of the checkout (regular files and folders only, size-capped) in a fresh temporary folder,
  one per command where the traces are namespace-isolated (SharedCopy): each binds it read-only;
- `env -i` plus the emulated job's variables; PATH holds only the stand-ins and an allowlist of
  side-effect-free tools: any other command is recorded by the stand-in and not run;
- bubblewrap: new user, mount, PID, network and IPC namespaces; the root file system is /usr
  (read-only), the copy at /work and an empty /tmp, both memory file systems of a capped size;
  nothing else of the machine is there;
- as root, the child drops to the unprivileged `nobody` user first, so that the process limit holds;
- rlimits (CPU seconds, address space, file size, processes) and a wall-clock timeout after which
  the whole process group is killed.
Without bubblewrap the trace runs only when the caller says the content is its own (`trusted`), as
a command-line user's own script is; the bot never traces fork content that way.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import MapleError

NOBODY = 65534
MAX_COPY_BYTES = 64 << 20
MAX_COPY_FILES = 5000
# Folders of installed dependencies and caches: what a launch script names is never in them, and a
# checkout with its node_modules or a venv would pass the caps. (Not `git ls-files`: git reads the
# untrusted checkout's own config, which can name commands to run.)
NOT_COPIED = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
                        ".pytest_cache", ".ruff_cache"})
# Tools that read or compute and change nothing outside the sandbox's own writable copy; each is
# the real program. Everything else on a script's lines goes to the stand-in (recorded, not run).
READ_TOOLS = ("awk", "basename", "bash", "cat", "cut", "date", "dirname", "echo", "env", "expr", "false", "find",
              "getopt", "grep", "head", "id", "ls", "paste", "printf", "readlink", "realpath", "sed", "seq", "sh",
              "sort", "tail", "tr", "true", "uname", "uniq", "wc", "whoami", "xargs", "tac", "rev", "column",
              "numfmt", "bc", "md5sum", "sha256sum", "stat", "test", "[", "shuf")
# Writing tools: real only inside the namespace sandbox, where /work and /tmp are the only writable places.
WRITE_TOOLS = ("mkdir", "touch", "tee", "cp", "mv", "rm", "ln", "chmod", "mktemp")
STANDINS = ("srun", "mpiexec", "mpirun", "mpiexec.hydra", "aprun", "ibrun", "jsrun", "lrun", "flux", "torchrun",
            "torchrun_jsc", "deepspeed", "accelerate", "python", "python3", "ssh", "pdsh", "pbsdsh", "sbatch", "qsub",
            "bsub", "scontrol", "hostname", "nvidia-smi", "rocm-smi", "module", "ml", "conda", "mamba", "micromamba",
            "pip", "pip3", "nproc", "sleep", "numactl", "taskset", "nsys", "ncu", "apptainer", "singularity",
            "podman-hpc", "shifter", "uv", "git", "wget", "curl", "wandb", "huggingface-cli", "sinfo", "squeue",
            "sacct", "qstat", "stdbuf", "nohup", "enroot", "skypilot-nodes", "timeout")


@dataclass(frozen=True)
class Limits:
    wall_s: float = 30.0
    cpu_s: int = 20
    memory_mb: int = 1024
    file_mb: int = 16
    processes: int = 256
    writable_mb: int = 128  # each of the copy and /tmp: memory file systems, so a writing loop ends there

    def prlimit(self) -> list:
        """The command prefix that sets the limits (soft and hard) on what it runs: util-linux's prlimit(1)."""
        tool = shutil.which("prlimit")
        if tool is None:
            raise MapleError("maple trace bounds the script with prlimit (util-linux), which is not on PATH here")
        return [tool, f"--cpu={self.cpu_s}", f"--as={self.memory_mb << 20}", f"--fsize={self.file_mb << 20}",
                f"--nproc={self.processes}", "--"]


def bwrap() -> str | None:
    return shutil.which("bwrap")


def copy_checkout(src: Path, dst: Path) -> None:
    """Regular files and folders of the checkout (no links, devices, NOT_COPIED folders), within the caps."""
    total, count = 0, 0
    for folder, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d not in NOT_COPIED and not os.path.islink(os.path.join(folder, d))]
        target = dst / os.path.relpath(folder, src)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            total, count = total + os.path.getsize(path), count + 1
            if total > MAX_COPY_BYTES or count > MAX_COPY_FILES:
                raise MapleError(f"the checkout is too large to trace (over {MAX_COPY_BYTES >> 20} MiB or "
                                 f"{MAX_COPY_FILES} files); trace the script from a smaller folder")
            shutil.copyfile(path, target / name)
            os.chmod(target / name, 0o755 if os.access(path, os.X_OK) else 0o644)


def scratch() -> str | None:
    """Where a sandbox's folder goes: a memory file system when the machine has one. The copy is capped
    and lives for one trace; on a disk, creating its thousands of files cost seconds (17x a tmpfs here)."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def interpreter() -> str:
    """A plain python3 for the stand-ins: the system's when there is one (readable by nobody)."""
    for candidate in ("/usr/bin/python3", shutil.which("python3") or ""):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise MapleError("maple trace needs a python3 on the machine for its stand-ins")


PRELUDE = r"""# maple trace: every bash the traced script starts reads this first (BASH_ENV).
_maple() { "$MAPLE_TRACE_PY" -I -S "$MAPLE_TRACE_HOME/standin.py" "$@"; }
command_not_found_handle() { _maple "$@"; }
_maple_source() {
  case "$1" in
    /work/*|[!/]*) if [[ "$1" != *..* && -f "$1" ]]; then builtin source "$@"; return; fi ;;
  esac
  _maple source "$@"; return 0
}
source() { _maple_source "$@"; }
.() { _maple_source "$@"; }
module() { _maple module "$@"; }
ml() { _maple ml "$@"; }
conda() { _maple conda "$@"; }
# a folder outside the copy (the site's code or scratch: `cd /code/Megatron`): the job would be there,
# the trace stays where it is and records the cd, so that `set -e` and `cd X || exit` go on as in the job
cd() { builtin cd "$@" 2>/dev/null || _maple cd "$@"; }
"""


class Sandbox:
    """One trace's folder: the copy, the stand-ins, their data and the records."""

    def __init__(self, checkout: Path, alloc: dict, grammars: dict, isolated: bool, shared: "SharedCopy | None" = None):
        self.root = Path(tempfile.mkdtemp(prefix="maple-trace-", dir=scratch()))
        self.isolated = isolated
        self.home = self.root / "maple"
        if isolated and shared is not None:  # bound read-only and copied again inside: never written
            self.work = shared.of(checkout)
        else:  # without the namespace the script writes in place: a copy of its own
            self.work = self.root / "work"
            copy_checkout(checkout, self.work)
        self._stand_ins(alloc, grammars)
        if isolated:
            for_nobody(self.root)

    def place(self, relative: Path, text: str) -> Path:
        """Where the traced text runs: beside the file it stands for, under a name of its own. In the
        namespace it waits in /maple and is copied to its place inside, so the copy stays as it was."""
        script = (self.work / relative).with_name(f".maple-trace-{relative.name}")
        (self.home / "script" if self.isolated else script).write_text(text)
        if self.isolated and os.geteuid() == 0:
            os.chown(self.home / "script", NOBODY, NOBODY)
        return script

    def inside(self, path: Path) -> str:
        """How the traced script sees a host path of the sandbox."""
        base = {self.work: "/work", self.home: "/maple"} if self.isolated else {}
        for host, seen in base.items():
            if path == host or host in path.parents:
                return seen + str(path)[len(str(host)):]
        return str(path)

    def _stand_ins(self, alloc: dict, grammars: dict) -> None:
        here = Path(__file__).parent
        (self.home / "bin").mkdir(parents=True)
        (self.home / "out").mkdir()
        shutil.copyfile(here / "standin.py", self.home / "standin.py")
        shutil.copyfile(here.parent / "launchers" / "options.py", self.home / "launch_options.py")
        for helper in ("runners.py", "answers.py", "ranks.py", "visible.py", "placement.py"):  # the stand-in's own modules
            shutil.copyfile(here / helper, self.home / helper)
        (self.home / "alloc.json").write_text(json.dumps(alloc))
        (self.home / "grammars.json").write_text(json.dumps(grammars))
        (self.home / "prelude.sh").write_text(PRELUDE)
        # sh, not bash (which reads BASH_ENV's prelude first), and no basename process: one stand-in call
        # is one interpreter start
        shim = '#!/bin/sh\nexec "$MAPLE_TRACE_PY" -I -S "$MAPLE_TRACE_HOME/standin.py" "${0##*/}" "$@"\n'
        for name in STANDINS:
            (self.home / "bin" / name).write_text(shim)
            (self.home / "bin" / name).chmod(0o755)
        for name in READ_TOOLS + (WRITE_TOOLS if self.isolated else ()):
            real = shutil.which(name)
            if real and not (self.home / "bin" / name).exists():
                (self.home / "bin" / name).symlink_to(real)

    def environment(self, job_env: dict) -> dict:
        home = self.inside(self.home)
        return {"PATH": f"{home}/bin", "HOME": "/tmp/home" if self.isolated else str(self.root / "home"),
                "USER": "user", "LOGNAME": "user", "LANG": "C.UTF-8", "SHELL": "/bin/bash", "TMPDIR": "/tmp",
                "BASH_ENV": f"{home}/prelude.sh", "MAPLE_TRACE_HOME": home,
                "MAPLE_TRACE_PY": interpreter(), **job_env}

    def command(self, script: Path, args: list, limits: Limits) -> list:
        inner = ["/bin/bash", self.inside(script), *args]
        if not self.isolated:
            return inner
        # The copy is read-only at /checkout and copied again, inside, onto a size-capped /work: what the
        # script writes is bounded by that cap, not by the host's disk or memory.
        room = str(limits.writable_mb << 20)
        return [bwrap(), "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr",
                "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                "--ro-bind", str(self.work), "/checkout", "--size", room, "--tmpfs", "/work",
                "--ro-bind", str(self.home), "/maple", "--bind", str(self.home / "out"), "/maple/out",
                "--proc", "/proc", "--dev", "/dev", "--size", room, "--tmpfs", "/tmp", "--dir", "/tmp/home",
                "--chdir", "/work", "--", "/bin/bash", "-c",
                'cp -a /checkout/. /work/ && cp /maple/script "$2" && cd "$0" && exec "$@"',
                self.inside(script.parent), *inner]

    def run(self, script: Path, args: list, job_env: dict, limits: Limits) -> subprocess.CompletedProcess:
        # Traces run side by side in threads, where Python code between fork and exec (preexec_fn) can
        # deadlock (subprocess docs): the new session and the user are Popen's own, the limits prlimit(1)'s.
        as_nobody = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if self.isolated and os.geteuid() == 0 else {}
        process = subprocess.Popen([*limits.prlimit(), *self.command(script, args, limits)], env=self.environment(job_env),
                                   cwd=script.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   stdin=subprocess.DEVNULL, start_new_session=True, **as_nobody)
        try:
            stdout, stderr = process.communicate(timeout=limits.wall_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            return subprocess.CompletedProcess(process.args, -signal.SIGKILL, stdout, stderr + b"\n[maple trace: wall-clock limit]")
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

    def events(self) -> list[dict]:
        path = self.home / "out" / "events.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(errors="replace").splitlines()[:10000] if line.startswith("{")]

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def for_nobody(root: Path) -> None:
    """As root, the sandbox runs as nobody (Sandbox.run): its folder is given to nobody."""
    if os.geteuid() != 0:
        return
    for folder, dirs, files in os.walk(root):
        for name in [".", *dirs, *files]:
            os.chown(os.path.join(folder, name), NOBODY, NOBODY)


class SharedCopy:
    """One copy of a checkout for every namespace-isolated trace of one command (the source and each
    port): each sandbox binds it read-only at /checkout and copies it onto its own capped /work, so
    no trace sees what another wrote, as with a copy each. Copying 1400 files took 0.2-0.4 s a trace."""

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="maple-checkout-", dir=scratch()))
        self._copies: dict = {}
        self._lock = threading.Lock()

    def of(self, checkout: Path) -> Path:
        with self._lock:  # traces run side by side: the first one copies, the others wait for it
            if checkout not in self._copies:
                try:
                    copy_checkout(checkout, self.root / str(len(self._copies)))
                    self._copies[checkout] = self.root / str(len(self._copies))
                except MapleError as error:  # too large: every trace of it says so, without copying again
                    self._copies[checkout] = error
                for_nobody(self.root)
            if isinstance(self._copies[checkout], MapleError):
                raise self._copies[checkout]
            return self._copies[checkout]

    def __enter__(self) -> "SharedCopy":
        return self

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
