"""Reading a job log: which lines are errors, the first real one with a window around it
(locate), and what kind of failure it is (classify)."""

import re
from functools import lru_cache
from typing import Optional

from pydantic import BaseModel, Field

from .kb import Category, exact_hits

# ---------------------------------------------------------------------------------------------
# Line classifier

# A line is an error line when one of these matches and none of the benign patterns does.
# Case matters: "Error:"/"ERROR" are error markers, "error" inside prose usually is not.
_ERROR_PATTERNS = [
    r"Traceback \(most recent call last\)",
    r"\b[A-Z]\w*(?:Error|Exception)\b(?::|$)",  # RuntimeError: ..., torch.OutOfMemoryError: ...
    r"\b(?:sbatch|salloc|srun|slurmstepd|mpiexec|mpirun|ibrun|pdsh|gcc|g\+\+|nvcc): (?:error|fatal)\b",
    r"(?:^|[ \t'\"])qsub: ",  # qsub only speaks when it refuses a job (a wrapper may quote its output)
    r"=>> PBS: job killed",
    r"\bNCCL WARN\b",
    r"\[E(?:\d{4})?[ \]]",  # torch C++ error-level log lines ("[E1121 05:00:00 ...", before torch 2.2 "[E ProcessGroupNCCL.cpp:563]")
    r"\|CCL_ERROR\|",
    r"\bFATAL\b|\bFatal error\b",
    r"\bERROR\b",
    r"\berror:",
    r"Lmod has detected the following error|MODULEPATH is not set",
    # Lmod's warnings that leave the job without its modules (not deprecations: lmod-messages.yaml)
    r"Lmod Warning:\s+(?:The following modules were not loaded|MODULEPATH is undefined|The system MODULEPATH has changed"
    r"|One or more modules in your \S+ collection have changed)",
    r"The following dependent module\(s\) are not currently loaded",  # Lmod's w_MissingModules
    r"(?:^|[ \t])Killed(?:[ \t]|$)",
    r"\bCUDA error\b|\bHIP error\b",
    r"command not found",
    r"No such file or directory",
    r"can't open file",
    r"Permission denied",
    r"\bError(?: \[|:)",  # MIOpen(HIP): Error [...], Error: network ... not found
    r"Segmentation fault|core dumped|\bAborted\b",
    r"oom[-_]kill|Out Of Memory",
    r"NODE_FAIL|DUE TO NODE FAILURE|CANCELLED AT \S+ DUE TO",
    r"Uncorrectable|ECC error|fallen off the bus|\bXid\b",
    r"Cassini Event Queue overflow",
    r"No VNIs available",
    r"failed to acquire job resources",
    r"No active allocation found",
    r"Unable to allocate resources|Batch job submission failed",  # srun/salloc refusals without a prefix
    r"cannot find name for (?:user|group) ID|unknown userid \d+",  # a node missing the user
    # A site's submit filter speaks in sentences, without an "error:" prefix.
    r"\b[Uu]sers? must specify\b|has not been specified|(?:is|are) now required|Please reschedule your job",
    r"step creation temporarily disabled",  # srun waiting for resources the batch step holds
    r"\blaunch failed on \S+:",  # PALS (mpiexec on HPE Cray PBS)
    r"\[error\]|: (?:write|read) error\b",  # mercury/DAOS, libcxi
    r"\b(?:hip|cuda)Error[A-Z]\w*",  # hipErrorNoBinaryForGpu, cudaErrorECCUncorrectable
    r"\bCUDA_ERROR_[A-Z_]+\b",  # the driver API's names, as XLA prints them (gpu-runtime.yaml)
    r"Last NCCL warning\(error\)",  # XLA quoting NCCL's last WARN line
    r"\bSignal \d+ \(SIG[A-Z]+\) received by PID",  # torchelastic: a worker ended by a signal
    r"is/are busy or unavailable",  # CUDA devices in exclusive-process mode
    r"installed CUDA driver is: not available",  # conda solving CUDA packages on a node without a driver
    r"\bfork: (?:retry: )?Resource temporarily unavailable|Disk quota exceeded",  # ALCF's submit filter (sbank), printed without a qsub: prefix
    r"allocation failure:",  # sbatch --test-only, salloc
    r"Request aborted by esub|\bNo such queue\. Job not submitted",  # LSF: an esub (its reason on the lines before), bsub
    r"\bTERM_[A-Z_]+: job killed",  # LSF's termination reason (bjobs -l, the job's output report)
    r"\b(?:ZE|UR)_RESULT_ERROR_[A-Z_]+",  # Intel Level Zero's and Unified Runtime's result codes (XPU)
    r"\bssh exited with exit code [1-9]",  # pdsh (DeepSpeed's multi-node launcher) says nothing else
    r"PMI2?_Init failed",  # Open MPI started by srun without a matching PMI
    r"version [`']?(?:GLIBC|GLIBCXX|CXXABI)_[\d.]+'? not found",  # the loader: a library older than the program needs
    r"Read-only file system",
    r"\bEnvironmentNameNotFound:",  # conda's error class without "Error" in its name
    r"Software endpoint mode required|cxip_gen_auth_key failed",  # libfabric CXI, logged at <warn>
    r"\bjob\.exception\b[^\n]*\bseverity=0\b",  # Flux: a fatal job exception (severity 0 ends the job)
    r"ping failed on|ping RPC timeout",  # PALS losing a node (Aurora)
    r"Unexpected page fault from GPU",
    r"(?:server|client) socket (?:has failed to (?:bind|listen)|cannot be initialized|has timed out)",
    # NCCL/RCCL's own result names and wording, printed without a Python exception around them.
    r"\b(?:nccl|rccl)[A-Z]\w*Error\b|\b[Rr]ccl error\b|unhandled system error",
    r"\b(?:CUDA|HIP|XPU) out of memory",  # quoted in prose as often as in a traceback
    r"There are not enough slots available",  # Open MPI's mpirun (horovodrun, torchpack use it)
    r"\b[Mm]ust request\b",  # a site's submit filter (Torque/PBS), in a sentence
    r"\bur_die:",  # Intel's Unified Runtime aborting (oneCCL on XPU)
    r"\bNCCL failure \S+:\d+ '",  # nccl-tests: Test NCCL failure common.cu:959 'internal error ...'
    r"No space left on device",
    r"exceeded MEM usage (?:hard|soft) limit",  # Moab/Torque killing a job over its memory limit
    r"NVIDIA-SMI has failed",  # no driver reachable on the node
    r"\bblas_thread_init: pthread_create",  # OpenBLAS over the user's process limit
    r"\bEXCEPTION: ",  # oneCCL's own exceptions, before its |CCL_ERROR| lines
    r"WARNING: Could not find any \w+ libraries on this host!",  # apptainer --nv/--rocm on a node without the driver
    # Why a job is pending: squeue's NODELIST(REASON) column, scontrol show job's Reason= (slurm-pending.yaml)
    r"\bPD\s+\S+\s+\d+\s+\((?!None\))[A-Z]\w+\)\s*$|\bJobState=PENDING Reason=(?!None\b)\w",
]
# Lines that look like errors but are documented as harmless.
_BENIGN_PATTERNS = [
    r"errno: 97 - Address family not supported",  # c10d IPv6 fallback (OLCF pytorch_frontier)
    r"srun: error: ioctl\(TIOCGWINSZ\)",  # srun without a terminal
    r'spank: x11\.so: Plugin file not found|Ignoring conflicting option "x11" in plugin "x11"',  # a site's X11 plugin
    r"from LD_PRELOAD cannot be preloaded .*: ignored",
    r"PMIX ERROR: PMIX_ERR(?:OR|_NOT_FOUND) in file dstore_base\.c",  # single-node runs (Aurora known issues)
    r"\b(?:User|Future|Deprecation|Runtime)Warning\b",
    # torchelastic's header before it dumps a worker's error record as JSON; the record's own
    # "message" line that follows names the error.
    r"errors\.error_handler:\{\s*$",
    # torch C++ warning-level lines ("[W socket.cpp:...]", after an srun label "0: "): c10d retries,
    # except retries to a host name that does not resolve, which can never succeed.
    r"^\s*(?:\[?(?:rank|default)?\d+\]?:\s?)?\[W(?:\d{4})?[ \]](?!.*Name or service not known)",
]
_ERROR_LINE = re.compile("|".join(_ERROR_PATTERNS))
_BENIGN_LINE = re.compile("|".join(_BENIGN_PATTERNS))
# A logger's own prefix, whose level word says nothing about the line: Ray's "(Actor pid=N)" and
# vLLM's "ERROR 08-27 05:12:18 file.py:382]" in front of every line of a traceback it logs.
_LOGGER_PREFIX = re.compile(r"^\(\w+ pid=\d+(?:, ip=[\d.]+)?\) (?:(?:ERROR|WARNING|INFO|DEBUG) \d\d-\d\d [\d:]{8} [\w.]+:\d+\] )?")
# A traceback's source line (`    raise RuntimeError(f"NCCL error: ...")`) is code, not the error.
_SOURCE_LINE = re.compile(r"^\s+raise\s+[\w.]+\(")
# Every error pattern needs one of these words. Python's regex engine tries each alternative at
# every character (~2 MB/s here); str.find runs at memory speed, so only lines holding one of
# these words reach the regexes.
_KEYWORDS = (
    "Traceback", "Error", "Exception", "error", "ERROR", "qsub: ", "PBS: job killed", "NCCL WARN",
    "FATAL", "Fatal", "Lmod has detected", "Killed", "command not found", "No such file",
    "can't open file", "Permission denied", "Segmentation fault", "core dumped", "Aborted", "oom",
    "Out Of Memory", "NODE_FAIL", "NODE FAILURE", "CANCELLED AT", "Uncorrectable", "fallen off the bus",
    "Xid", "Cassini", "No VNIs", "failed to acquire", "allocation failure", "ping failed", "ping RPC",
    "page fault", "socket", "[E", "No active allocation", "Unable to allocate", "Batch job submission",
    "cannot find name", "unknown userid", "must specify", "not been specified", "now required",
    "Please reschedule", "step creation", "launch failed", "[error]", "write error", "read error", "busy or unavailable", "installed CUDA driver", "fork: ", "Disk quota",
    "out of memory", "not enough slots", "ust request", "ur_die:", "system error",
    "NCCL failure", "No space left", "exceeded MEM usage", "NVIDIA-SMI has failed", "blas_thread_init",
    "EXCEPTION: ", "job.exception", "aborted by esub", "endpoint mode required", "cxip_gen_auth_key", "TERM_", "_RESULT_ERROR_", "ssh exited", "_Init failed", "' not found", "Read-only file system", "EnvironmentNameNotFound",
    " PD ", "JobState=PENDING", "Could not find any", "CUDA_ERROR_", "Last NCCL warning", "received by PID", "No such queue", "Lmod Warning", "MODULEPATH is not set", "dependent module(s)",
)  # fmt: skip


def is_error_line(line: str) -> bool:
    # Cheapest test first: keywords, then the short benign list, then the long error pattern.
    if not any(k in line for k in _KEYWORDS):
        return False
    text = _RANK_PREFIX.sub("", _LOGGER_PREFIX.sub("", line, count=1), count=1)
    return not _BENIGN_LINE.search(text) and not _SOURCE_LINE.match(text) and bool(_ERROR_LINE.search(text))


# ---------------------------------------------------------------------------------------------
# Locator

CHUNK_LINES = 512
WINDOW_BEFORE, WINDOW_AFTER = 5, 20
_TRACEBACK_SCAN = 400  # how far to look for the exception line that ends a traceback

# srun --label ("3: "), torchrun ("[rank3]: ", "[default3]:") prefixes; not "12:30:01" timestamps.
_RANK_PREFIX = re.compile(r"^\s*\[?(?:rank|default)?(?P<rank>\d+)\]?:\s?(?!\d)")


class Failure(BaseModel):
    line_no: int  # 1-based number of the first error line
    line: str
    exception: Optional[str] = None  # the line ending a Python traceback that starts at line_no
    window_start: int  # 1-based number of window[0]
    window: list[str]
    category: Category
    ranks: list[int] = Field(default_factory=list)  # rank labels on the error lines of the window

    @property
    def error_text(self) -> str:
        """The window from the first error line on: what known-error patterns are matched against."""
        return "\n".join(self.window[self.line_no - self.window_start :])

    @property
    def signature(self) -> str:
        """The error lines of the window without rank labels: the text embedded for similarity."""
        lines = [_RANK_PREFIX.sub("", line).strip() for line in self.window if is_error_line(line)]
        if self.exception:
            lines.append(_RANK_PREFIX.sub("", self.exception).strip())
        return "\n".join(dict.fromkeys(lines))  # keep order, drop repeats from other ranks


def _first_error_in(lines: list[str]) -> Optional[int]:
    """Index of the first error line in a block of lines, or None."""
    text = "\n".join(lines)
    starts = set()  # offsets of the lines that hold a keyword
    for keyword in _KEYWORDS:
        pos = text.find(keyword)
        while pos != -1:
            starts.add(text.rfind("\n", 0, pos) + 1)
            end = text.find("\n", pos)
            pos = -1 if end == -1 else text.find(keyword, end)
    index, previous = 0, 0
    for start in sorted(starts):
        index += text.count("\n", previous, start)
        previous = start
        if is_error_line(lines[index]):
            return index
    return None


def _first_error_line(lines: list[str]) -> Optional[int]:
    """Index of the first error line. The log is cut into chunks and the first chunk whose prefix
    holds an error is bisected for ("the first c chunks hold an error" is monotone in c); chunk
    results are memoised, so each chunk is scanned at most once and none after the first error."""

    @lru_cache(maxsize=None)
    def first_in_chunk(c: int) -> Optional[int]:
        return _first_error_in(lines[c * CHUNK_LINES : (c + 1) * CHUNK_LINES])

    def prefix_has_error(c: int) -> bool:
        return any(first_in_chunk(j) is not None for j in range(c + 1))

    chunks = -(-len(lines) // CHUNK_LINES)
    lo, hi = 0, chunks
    while lo < hi:
        mid = (lo + hi) // 2
        if prefix_has_error(mid):
            hi = mid
        else:
            lo = mid + 1
    return None if lo == chunks else lo * CHUNK_LINES + first_in_chunk(lo)


def _exception_line(lines: list[str], start: int) -> Optional[int]:
    """Index of the exception that ends the traceback starting at `start`: the first line after it
    that, without its rank label, is neither indented nor blank nor a traceback header."""
    for i in range(start + 1, min(len(lines), start + _TRACEBACK_SCAN)):
        text = _RANK_PREFIX.sub("", lines[i])
        headers = ("Traceback", "During handling", "The above")
        if text.strip() and not text[0].isspace() and not text.startswith(headers):
            return i
    return None


# A refusal whose reason is the site's own sentences on the lines before it (an esub, a submit filter).
_REASON_BEFORE = re.compile(r"Request aborted by esub|qsub: submit filter returned an error code")
# An exception printed with no message of its own: what went wrong is on the next line (Gloo's
# checks print "[enforce fail at file:line]" and their message on the next line).
_BARE_EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception):\s*(?:\[enforce fail at [^\]]*\]\s*)?$")
# A workflow tool's header above a task's own stderr (Nextflow's "Command error:"): its first error line.
_STDERR_HEADER = re.compile(r"^\s*Command error:\s*$")
# A wrapper that prints the cause after its own summary: NCCL's "Last error:" line before
# ncclGetLastError()'s text (src/init.cc), pyxis printing enroot's log file after "container start
# failed" (NVIDIA/pyxis pyxis_slurmstepd.c). The cause is the first error line after the marker.
_CAUSE_FOLLOWS = re.compile(r"^\s*Last error:\s*$|\bprinting contents of log file\b")


def _reason_start(lines: list[str], first: int) -> int:
    """The first line of the reason a refusal gives before it (up to 3 plain lines), else `first`."""
    if not _REASON_BEFORE.search(lines[first]):
        return first
    start = first
    while start > max(0, first - 3) and lines[start - 1].strip() and not is_error_line(lines[start - 1]):
        start -= 1
    return start


def _exception_for(lines: list[str], first: int) -> Optional[int]:
    """The line that says what the error at `first` is, when `first` only announces it."""
    if "Traceback (most recent call last)" in lines[first]:
        return _exception_line(lines, first)
    after = [i for i in range(first + 1, min(len(lines), first + 6)) if lines[i].strip()]
    if _STDERR_HEADER.match(lines[first]):
        return next((i for i in after if is_error_line(lines[i])), None)
    marker = next((i for i in after[:2] if _CAUSE_FOLLOWS.search(_RANK_PREFIX.sub("", lines[i], count=1))), None)
    if marker is not None:
        return next((i for i in after if i > marker and lines[i].strip()), None)
    if _BARE_EXCEPTION.search(lines[first]):
        return after[0] if after else None
    return None


def locate(log: str) -> Optional[Failure]:
    """The first error line of `log` with a window around it, or None if no line is an error."""
    # Lines as editors number them: split on newlines only; progress bars redraw with bare \r.
    lines = [line.removesuffix("\r") for line in log.split("\n")]
    first = _first_error_line(lines)
    if first is None:
        return None
    first = _reason_start(lines, first)
    end = first + WINDOW_AFTER + 1
    exc = _exception_for(lines, first)
    exception = lines[exc] if exc is not None else None
    if exc is not None:
        end = max(end, exc + 1)
    start = max(0, first - WINDOW_BEFORE)
    window = lines[start:end]
    labels = (_RANK_PREFIX.match(line) for line in window[first - start :] if is_error_line(line))
    ranks = sorted({int(m["rank"]) for m in labels if m})
    error_text = "\n".join(lines[first:end])
    return Failure(
        line_no=first + 1,
        line=lines[first],
        exception=exception,
        window_start=start + 1,
        window=window,
        category=classify(error_text),
        ranks=ranks,
    )


# Broad signatures for failures no knowledge-base entry knows; checked in order, first hit wins.
_CATEGORY_RULES: list[tuple[Category, re.Pattern]] = [
    (c, re.compile(p, re.MULTILINE))
    for c, p in [
        ("infrastructure", r"NODE_FAIL|NODE FAILURE|Node failure|ECC error|Uncorrectable|fallen off the bus|\bXid\b"),
        ("scheduler", r"\b(?:sbatch|salloc): error|(?:^|\s)qsub: |Batch job submission failed|allocation failure"
                      r"|Unable to allocate resources|=>> PBS: job killed|DUE TO TIME LIMIT"),
        ("environment", r"Lmod has detected|modulefile|command not found|ModuleNotFoundError|ImportError|execve\(\)"),
        ("library", r"\bNCCL\b|\bRCCL\b|\bCCL_|CUDA error|HIP error|cuDNN|libfabric|\bMPICH\b|deepspeed|DeepSpeed"),
        ("launcher", r"rendezvous|Rendezvous|torch\.distributed\.elastic|DistNetworkError|DistStoreError"
                     r"|\bsrun: error|mpiexec|socket"),
    ]
]


def classify(error_text: str) -> Category:
    """Category of the failure whose text starts at its first error line: the category of the
    knowledge-base entry that matches earliest, else the broad rules, else a user-program error."""
    hits = exact_hits(error_text, cluster=None, local_size=None, ranks=[])
    if hits:
        return hits[0].entry.category
    return next((c for c, pattern in _CATEGORY_RULES if pattern.search(error_text)), "program")

