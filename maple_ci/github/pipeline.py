"""The real pipeline behind the bot: extract -> port -> verify -> debug, in delivery's shapes.

Two steps, because the jacamar backend verifies a script the center fetches by commit: `port`
generates the files (verification "pending"); the bot commits them; `verify` runs the backends
against that commit and turns a debug-agent fix into review suggestions.

Files come from `checkout(ref)`, a directory holding the repository at `ref`. The bot only reads
them: a PR's launch script is text to parse, never a program to run.
"""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
import tempfile
import threading
from dataclasses import asdict, dataclass, field, replace
from fnmatch import fnmatch
from functools import partial
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Callable, ContextManager, Iterator, Mapping

from maple_ci.errors import MapleError
from maple_ci.extract.isolated import Limits, extract_isolated
from maple_ci.files import inside, read_inside
from maple_ci.github.commands import BotCommand
from maple_ci.github.config import Config
from maple_ci.github.delivery import ClusterResult, SourceResult
from maple_ci.github.markdown import code
from maple_ci.intent import REQUIRED_FOR_PORT
from maple_ci import pipeline as flow
from maple_ci.verify import miniapp_for
from maple_ci.verify.cancel import run_all
from maple_ci.verify.static import Check
from maple_ci.verify.substitute import VerifyResult

if TYPE_CHECKING:
    from maple_ci.debug import DebugReport
    from maple_ci.llm import Backend as ModelClient

Checkout = Callable[[str], ContextManager[Path]]
LAUNCH_SUFFIXES = (".sh", ".sbatch", ".slurm", ".pbs", ".qsub", ".job")
PLACEHOLDERS = {"entrypoint": "PROGRAM"}  # what a retry command asks the person to fill in


# A runner runs `script` (the text of repo file `path`, committed at `commit`) with `miniapp` in
# place of the training program. `committed` is False for a debug agent's patched script, which
# exists only here; runners that fetch by commit (jacamar) cannot run it.
Runner = Callable[..., VerifyResult]
# Told of each script's verification as it changes (checks.CheckRuns.update: the check runs).
Progress = Callable[[SourceResult, ClusterResult], None]


def _timeout(env: Mapping[str, str]) -> int | None:
    """MAPLE_VERIFY_TIMEOUT seconds if set (the action's verify-timeout input), else None: the
    backend's own limit."""
    limit = env.get("MAPLE_VERIFY_TIMEOUT", "").strip()
    if limit and not (limit.isdigit() and int(limit) > 0):
        raise MapleError(f"MAPLE_VERIFY_TIMEOUT (verify-timeout) must be a whole number of seconds, not {limit!r}")
    return int(limit) if limit else None


def run_backend(backend: str, *, cluster: str, path: str, script: str, miniapp: str, commit: str,
                committed: bool, env: Mapping[str, str]) -> VerifyResult:
    """Run one verification with the named backend. jacamar: the center checks out `commit` and runs
    the file there; slurm and local: a scratch copy, never a file in the checkout."""
    options = dict(miniapp=miniapp, cluster=cluster, commit=commit, env=env, timeout=_timeout(env))
    return flow.script_runner(backend, Path(path), options)(script, committed)


@dataclass
class Pipeline:
    config: Config
    checkout: Checkout
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    backend: Runner = run_backend
    model: ModelClient | None = None  # the debug agent's language model (MAPLE_LLM), for failures the KB cannot fix
    # What reading one untrusted script may take, in a child process (every request's scripts pass through
    # _read): a script that needs more is refused and nothing is pushed. The port's own read-back of the
    # same text in this process then repeats a computation known to fit.
    limits: Limits = Limits()
    _analysis: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    # --- step 1: generate ---
    def port(self, command: BotCommand, sources: tuple[str, ...], ref: str) -> list[SourceResult]:
        """`port`: each source ported to the command's clusters. `verify`: the ported scripts at ref."""
        with self.checkout(ref) as root:
            if command.name == "verify":
                return self._ported_scripts(root, command.clusters)
            names = self._to_port(root, command, sources)
            if not names:
                raise MapleError("No launch script to port: name one with `--from PATH`, or list the tracked scripts "
                                 "under `sources` in .github/maple.yml.", exit_code=2)
            return _each(names, lambda name: self._port_one(root, name, command))

    def _to_port(self, root: Path, command: BotCommand, sources: tuple[str, ...]) -> list[str] | tuple[str, ...]:
        """The command's --from, else the launch scripts among `sources`, else every tracked script."""
        if command.source:
            return (command.source,)
        return self._launch_scripts(sources) or self._tracked(root)

    def _launch_scripts(self, names: tuple[str, ...]) -> list[str]:
        return [n for n in names if self._is_launch_script(n)]

    def _is_launch_script(self, name: str) -> bool:
        """A tracked script (a `sources` glob), or without globs one named like a batch script;
        never a ported script, which would port the port."""
        if PurePosixPath(name).is_relative_to(self.config.output):
            return False
        if self.config.sources:
            return any(fnmatch(name, pattern) for pattern in self.config.sources)
        return PurePosixPath(name).suffix in LAUNCH_SUFFIXES

    def _tracked(self, root: Path) -> list[str]:
        found = {p.relative_to(root).as_posix() for pattern in self.config.sources for p in root.glob(pattern)}
        return sorted(name for name in found if inside(root, Path(name)))  # a symlink among them is not read

    def _port_one(self, root: Path, name: str, command: BotCommand) -> SourceResult:
        from maple_ci.port import apply_overrides, port_intent

        # The name comes from a comment or the PR's tree: read only a regular file inside the checkout.
        text, intent = self._read(root, name)
        intent = apply_overrides(intent, **command.overrides())
        _require_facts(intent, command, name)
        notes, clusters = _generated(port_intent(intent, list(command.clusters), name, Path(self.config.output),
                                                 python_envs=self.config.python_env, source_text=text))
        return SourceResult(source=name, intent=asdict(intent), clusters=clusters, notes=notes)

    def _ported_scripts(self, root: Path, clusters: tuple[str, ...]) -> list[SourceResult]:
        """Every file under <output>/<cluster>/, one SourceResult each (its source is itself)."""
        out = root / self.config.output
        results = []
        for cluster in clusters or _ported_clusters(out):
            for file in _entries(out / cluster):
                results.append(self._ported_script(root, cluster, file.relative_to(root).as_posix()))
        return results

    def _ported_script(self, root: Path, cluster: str, path: str) -> SourceResult:
        """A ported script as read back, with its static checks for `cluster`."""
        from maple_ci.profiles import get_profile
        from maple_ci.verify.static import static_checks

        text, intent = self._read(root, path)
        checks = static_checks(text, intent, get_profile(cluster))
        return SourceResult(source=path, intent=asdict(intent), clusters=[_cluster(cluster, path, text, "", checks)])

    def _read(self, root: Path, name: str):
        """The text of repo file `name` and its JobIntent, read within self.limits."""
        text = read_inside(root, name, name)
        return text, extract_isolated(text, name, (root / name).parent, self.limits)

    # --- step 2: verify (after the files are committed at `commit`) ---
    def verify(self, command: BotCommand, results: list[SourceResult], commit: str, skip: str | None = None,
               progress: Progress | None = None) -> list[SourceResult]:
        """Results with verification filled in; `skip` says why nothing may run (e.g. a fork).
        Every run starts at once (each may wait an hour in a center's queue) and is cancelled if
        this process is stopped. progress(result, cluster result), called in this thread, sees
        each script go "running" (all of them, before any run starts), then to its verdict."""
        report = progress or (lambda result, c: None)
        runs = self._runs(command, results, skip, report)
        for result, c, _, _ in runs:
            c["verification"] = "running"
            report(result, c)
        tasks = [partial(self._verify_one, c, backend, miniapp, commit) for _, c, backend, miniapp in runs]
        run_all(tasks, lambda index, _: report(*runs[index][:2]))
        return results

    def _runs(self, command: BotCommand, results: list[SourceResult], skip: str | None, report: Progress) -> list[tuple]:
        """(result, cluster result, backend, miniapp) of each script to run; the others are skipped,
        and reported as such (that is their verdict)."""
        verified: dict[str, str] = {}  # cluster -> the script verified there in this request
        runs = []
        for result in results:
            for c in result["clusters"]:
                run = self._run_for(command, result, c, skip, verified)
                if run is None:
                    report(result, c)
                else:
                    runs.append(run)
        return runs

    def _run_for(self, command: BotCommand, result: SourceResult, c: ClusterResult, skip: str | None,
                 verified: dict[str, str]) -> tuple | None:
        """The run for one script, or None when it is skipped (its note says why)."""
        backend = self.config.backend(c["cluster"])
        why = _unverifiable(skip, backend, c["cluster"])
        if why is not None:
            c.update(verification="skipped", note=f"Verification skipped: {why}.")
            return None
        if command.name == "port" and c["cluster"] in verified:
            # Each run holds a real allocation: one per cluster per request (a nightly verify checks all).
            c.update(verification="skipped",
                     note=f"Verification skipped: one run per cluster per request; `{verified[c['cluster']]}` was run.")
            return None
        verified[c["cluster"]] = c["path"]
        intent = result["intent"]
        return result, c, backend, miniapp_for(intent.get("framework"), intent.get("strategy"))

    def _verify_one(self, c: ClusterResult, backend: str, miniapp: str, commit: str) -> None:
        """Verify one script (in a thread of its own), then let the debug agent at a failure."""
        def run(script: str, committed: bool) -> VerifyResult:
            return self.backend(backend, cluster=c["cluster"], path=c["path"], script=script, miniapp=miniapp,
                                commit=commit, committed=committed, env=self.env)

        try:
            verified = flow.verify_and_debug(c["content"], run, cluster=c["cluster"], path=c["path"],
                                             rerun=backend != "jacamar", model=self.model, lock=self._analysis)
        except MapleError as error:  # the backend could not run at all (misconfigured, no sbatch...)
            c.update(verification="error", note=f"Verification could not run on {backend}: {error}")
            return
        first = verified.result
        c.update(verification="passed" if first.ok else "failed", log_url=first.log_url or None)
        if verified.report is not None:
            _debugged(c, first.message, verified.report, rerun=backend != "jacamar", env=self.env)


def _unverifiable(skip: str | None, backend: str, cluster: str) -> str | None:
    """Why a script may not run: `skip`, or no backend configured for its cluster; None: it may."""
    if skip:
        return skip
    if backend == "none":
        return f"no verification backend configured for {cluster} (`verification` in .github/maple.yml)"
    return None


def _require_facts(intent, command: BotCommand, name: str) -> None:
    """Refuse to port without the facts a port needs; the refusal carries the request to copy,
    with what to fill in."""
    missing = [fact for fact in REQUIRED_FOR_PORT if getattr(intent, fact) is None]
    if missing:
        retry = replace(command, source=name, **{fact: PLACEHOLDERS.get(fact, fact.upper()) for fact in missing}).text()
        raise MapleError(f"{name}: cannot port without {', '.join(missing)} (not found in the script); "
                         f"ask again with {code(retry)}", exit_code=2)


def _generated(ported) -> tuple[list[str], list[ClusterResult]]:
    """The port's notes (clusters it could not generate for, and why) and its generated scripts."""
    notes, clusters = [], []
    for r in ported:
        if r.status == "unsupported":
            notes.append(f"{r.cluster}: not generated: {r.reason}")
            continue
        clusters.append(_cluster(r.cluster, str(r.path), r.script, r.template or "", r.checks))
    return notes, clusters


def _ported_clusters(out: Path) -> tuple[str, ...]:
    """The known clusters that have a folder under the output folder."""
    from maple_ci.profiles import load_profiles

    return tuple(sorted(p.name for p in out.glob("*") if p.name in load_profiles()))


def _entries(folder: Path) -> list[Path]:
    # Every entry is read, symlinks included: read_inside refuses one, naming it, and the
    # request fails before anything from it is extracted or posted.
    return sorted(p for p in folder.glob("*") if not p.is_dir() or p.is_symlink())


def _each(names: list[str], port_one: Callable[[str], SourceResult]) -> list[SourceResult]:
    """Every script that can be ported; those that cannot are named in the first result's notes.
    Only when none can is it an error (one script: its own)."""
    ported, refused = [], []
    for name in names:
        try:
            ported.append(port_one(name))
        except MapleError as error:
            if len(names) == 1:
                raise
            refused.append(f"not ported: {error}")
    if not ported:
        raise MapleError("\n".join(refused), exit_code=2)
    ported[0]["notes"] = ported[0].get("notes", []) + refused
    return ported


def _debugged(c: ClusterResult, failure: str, report: DebugReport, rerun: bool, env: Mapping[str, str] = {}) -> None:
    """The debug agent's work on `c` as review suggestions, its note (with GitHub's threads about
    the error when the action holds a token), and the fixed script when a re-run of it passed."""
    from maple_ci.debug.retrieval import online_note

    advice = _suggest_fix(c, report, rerun) if report.attempts else report.message
    related = "" if report.ok else online_note(report.failure, env)
    c["note"] = f"Verification failed: {failure.rstrip('.')}. Debug agent: {advice}{related}"


def _suggest_fix(c: ClusterResult, report: DebugReport, rerun: bool) -> str:
    """The agent's fix as review suggestions (and as the fixed script when its re-run passed); the advice."""
    from maple_ci.debug import suggestions

    why = "; ".join(dict.fromkeys(a.explanation for a in report.attempts))
    c["suggestions"] = [{**s.model_dump(), "message": why} for s in suggestions(c["content"], report.script, c["path"])]
    if report.ok:
        c["fixed"] = report.script
    return _advice(report, why, rerun)


def _advice(report: DebugReport, why: str, rerun: bool) -> str:
    if report.ok:
        return f"the run passed with the suggested fix ({why})."
    if report.stop_reason == "review":
        return f"suggested a fix ({why}), not run: a language model proposed it, so a person reviews it first."
    if not rerun:
        return f"suggested a fix ({why}), not re-run: this backend runs committed scripts only."
    return f"suggested fix(es) ({why}); then: {report.message}."


def _cluster(cluster: str, path: str, content: str, template: str, checks: list[Check]) -> ClusterResult:
    return ClusterResult(cluster=cluster, path=path, content=content, template=template,
                         checks=[check.model_dump(exclude_none=True) for check in checks],
                         verification="pending", log_url=None, suggestions=[])


def _fetch_env(env: Mapping[str, str]) -> dict[str, str]:
    """git's environment for a fetch from GitHub: with GITHUB_TOKEN, an Authorization header for
    the server's URLs only, passed through git's GIT_CONFIG_* variables. The workflows check out
    with persist-credentials: false (no token in .git/config), and a token in argv could be read
    from the process list by anything else on the runner."""
    fetch = dict(env)
    token = env.get("GITHUB_TOKEN")
    if token:
        n = int(env.get("GIT_CONFIG_COUNT") or 0)  # after any the runner set
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        server = env.get("GITHUB_SERVER_URL") or "https://github.com"
        fetch.update({"GIT_CONFIG_COUNT": str(n + 1), f"GIT_CONFIG_KEY_{n}": f"http.{server.rstrip('/')}/.extraheader",
                      f"GIT_CONFIG_VALUE_{n}": f"AUTHORIZATION: basic {basic}"})
    return fetch


@contextlib.contextmanager
def _worktree(root: Path, ref: str) -> Iterator[Path]:
    def git(*args: str, env: Mapping[str, str] | None = None) -> str:
        return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                              env=env).stdout.strip()

    # A branch or a PR head (also a fork's, by sha) is fetched and, unless the workspace already
    # holds it, checked out beside the workspace, to be read only.
    git("fetch", "--quiet", "--no-tags", "--depth=1", "origin", ref, env=_fetch_env(os.environ))
    if git("rev-parse", "FETCH_HEAD") == git("rev-parse", "HEAD"):
        yield root
        return
    with tempfile.TemporaryDirectory(prefix="maple-ref-") as scratch:
        tree = Path(scratch) / "tree"
        git("worktree", "add", "--quiet", "--detach", str(tree), "FETCH_HEAD")
        try:
            yield tree
        finally:
            git("worktree", "remove", "--force", str(tree))


def git_checkout(root: Path) -> Checkout:
    """The repository at a ref, from the Actions workspace `root` (a clone with `origin`)."""
    return lambda ref: _worktree(root, ref)
