"""Carry out a Plan (events.py) against one repository.

The pipeline is passed in as two functions, so the bot can be tested without it and the pipeline
without GitHub (pipeline.Pipeline has both):
  port(command, sources, ref) -> list[SourceResult] generates on the checkout of `ref`: the command's
    --from, else the launch scripts among `sources` (what a push or the PR changed), else every
    tracked script; for `verify` it collects the ported scripts at `ref`.
  verify(command, results, commit, skip) -> list[SourceResult] runs verification on `commit`, which
    holds the files (the jacamar backend fetches them by commit); `skip` says why it may not run.
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import datetime, timezone
from typing import Callable, NamedTuple, Optional

import github_action_toolkit as gha
from github.PullRequest import PullRequest
from github.Repository import Repository

from maple_ci.errors import MapleError
from maple_ci.github.approval import Provenance, approve, fork_source, permission, stamp, waiting_note
from maple_ci.github.body import render_pr_body, verified_reply
from maple_ci.github.checks import failing, verify_with_check_runs
from maple_ci.github.authorization import authorize, refusal
from maple_ci.github.commands import BotCommand
from maple_ci.github.config import Config, Schedule
from maple_ci.github.delivery import SourceResult, log_annotations, react, write_job_summary
from maple_ci.github.events import Plan
from maple_ci.github.markdown import code, log_safe
from maple_ci.github.ignoring import earlier_state, set_ignored, undo
from maple_ci.github.publish import AUTOMATIC, Published, propose_fixes, publish
from maple_ci.github.dashboard import ignored_rows, set_ignored_rows, sync_dashboard, without_ignored
from maple_ci.github.runs import Approvals, held, held_note, listing, run_set
from maple_ci.github.state import State
from maple_ci.github.target import Target, commit_sha, target
from maple_ci.github.thread import failed, reply
from maple_ci.github.trace_job import request as trace_request

# Runs after which the dashboard is drawn again (the nightly's also bring its results).
DASHBOARD_TRIGGERS = ("push", "dashboard")
PortFn = Callable[[BotCommand, tuple[str, ...], str], list[SourceResult]]
# verify(command, results, commit, skip, progress): progress(result, cluster result) as each run starts and ends
VerifyFn = Callable[[BotCommand, list[SourceResult], str, Optional[str], Optional[Callable]], list[SourceResult]]


class Done(NamedTuple):
    results: list[SourceResult]  # [] when nothing was run
    pr: PullRequest | None = None  # the PR opened or updated, if any
    trace: dict | None = None  # what the unprivileged trace job may trace (trace_job.request), if anything


def results_as_given(command: BotCommand, results: list[SourceResult], commit: str, skip: str | None,
                     progress: Callable | None = None) -> list[SourceResult]:
    """A VerifyFn for port functions whose results already carry their verification."""
    return results


def run_plan(repo: Repository, plan: Plan, port: PortFn, verify: VerifyFn = results_as_given,
             report: Schedule | None = None, settings: Config | None = None) -> Done:
    """Do what the plan says. `report`: where the nightly report issue goes (plans with `report` set),
    by default the settings' (.github/maple.yml); push and nightly errors are posted there too.

    Whatever fails (a MapleError, GitHub answering 5xx, a bug) is answered where the request came
    from, with the comment reacted "confused" and a link to the run, then raised as a MapleError."""
    print(f"maple: {log_safe(plan.reason)}", flush=True)
    report, settings = _settled(report, settings)
    if _left_alone(plan, settings):
        return Done([])
    comment = repo.get_issue(plan.issue_number).get_comment(plan.comment_id) if plan.comment_id else None  # lazy: no request
    try:
        return _answer_then_run(repo, plan, comment, port, verify, report, settings)
    except Exception as error:
        failure = failed(repo, plan, comment, error, report)
        if failure is error:
            raise
        raise failure from error


def _settled(report: Schedule | None, settings: Config | None) -> tuple[Schedule | None, Config]:
    """The settings (the defaults when none were read) and the report's schedule, by default theirs."""
    settings = settings or Config()
    return (report if report is not None else settings.schedule), settings


def _left_alone(plan: Plan, settings: Config) -> bool:
    """Nothing to run or say, or a push while refresh_on_push is off."""
    if plan.idle:
        return True
    if plan.trigger == "push" and not settings.refresh_on_push:
        print("maple: refresh_on_push is off in .github/maple.yml; the push is left alone", flush=True)
        return True
    if plan.trigger == "schedule" and not settings.schedule.due(datetime.now(timezone.utc).date()):
        print(f"maple: not a day of the {settings.schedule.interval} schedule in .github/maple.yml", flush=True)
        return True
    return False


def _answer_then_run(repo: Repository, plan: Plan, comment, port: PortFn, verify: VerifyFn,
                     report: Schedule | None, settings: Config) -> Done:
    """The plan's first answer (a refusal, a reaction, a fixed reply), then its command if one is left."""
    if not _answered_first(repo, plan, comment):
        return Done([])
    assert plan.command is not None
    return _run(repo, plan, plan.command, comment, port, verify, report, settings)


def _answered_first(repo: Repository, plan: Plan, comment) -> bool:
    """Refuse an actor without write access, react to the comment, post a plan's fixed reply;
    whether a command is still to run."""
    if _refused(repo, plan):
        print(f"maple: {plan.actor} has no write access; refused", flush=True)
        reply(repo, plan, refusal(plan.actor))
        return False
    if comment is not None and plan.reaction:
        react(comment, plan.reaction)
    if plan.reply is not None:
        reply(repo, plan, plan.reply)
        return False
    return True


def _refused(repo: Repository, plan: Plan) -> bool:
    """Whether the plan names an actor who may not make the bot push (authorization.authorize)."""
    return plan.actor is not None and not authorize(plan.association or "", permission(repo, plan.actor))


def _run(repo: Repository, plan: Plan, command: BotCommand, comment, port: PortFn, verify: VerifyFn,
         report: Schedule | None, settings: Config) -> Done:
    if command.name == "approve":
        return _answered(repo, plan, comment, _approve(repo, plan, command, settings.output))
    found = target(repo, plan, command)
    if command.name in ("ignore", "unignore") and plan.trigger == "dashboard":
        return _answered(repo, plan, comment, set_ignored_rows(repo, settings, found.base, command))
    if command.name in ("ignore", "unignore"):
        return _answered(repo, plan, comment, *set_ignored(repo, found.key, found.base, command, settings))
    narrowed = _narrowed(repo, plan, command, found, settings)
    if narrowed is None:
        print("maple: everything this run would port is ignored here; nothing to do", flush=True)
        return Done([])
    command, sources, left_out = narrowed
    approvals: dict[str, str | None] = {}
    gha.start_group(f"maple {command.name} {' '.join(command.clusters)}".rstrip())
    try:
        done = _ported(repo, plan, command, found, (port, verify), sources, approvals, report, settings)
    finally:
        gha.end_group()  # also on failure: the error must not be folded away in the log
    trace, waits = _trace_request(repo, command, found, done, approvals)
    _conclude(repo, plan, comment, done._replace(message=done.message + _afterword(approvals, left_out, settings) + waits))
    return Done(done.results, done.pr, trace)


def _trace_request(repo: Repository, command: BotCommand, found: Target, done: Published,
                   approvals: dict[str, str | None]) -> tuple[dict | None, str]:
    """A port's PR: what the trace job may trace (trace_job.request), and why it waits when it must."""
    if command.name != "port" or done.pr is None:
        return None, ""
    made, why = trace_request(repo, (found.fork_head, commit_sha(repo, found.ref)), done.results, done.pr.head.sha,
                              approvals)
    return made, f"\n\n{why}" if why else ""


def _approve(repo: Repository, plan: Plan, command: BotCommand, output: str) -> str:
    """`/maple approve <sha>`, approved by the commenter (on dispatch: whoever ran the workflow); the
    reply lists what verification of that commit runs (paths and blob hashes)."""
    assert command.sha is not None
    approved = approve(repo, command.sha, plan.actor or os.environ.get("GITHUB_ACTOR", ""))
    return f"{approved}\n\n{listing(repo, command.sha, output)}"


def _ported(repo: Repository, plan: Plan, command: BotCommand, found: Target, pipeline: tuple[PortFn, VerifyFn],
            sources: tuple[str, ...], approvals: dict[str, str | None], report: Schedule | None, settings: Config,
            ) -> Published:
    """Port, verify what approvals let run and deliver; nightly, the report issue kept in step."""
    port, verify = pipeline
    board = settings.model_copy(update={"schedule": report}) if report is not None else None
    results = port(command, sources, found.ref)
    if plan.report and board is not None:
        results = without_ignored(results, ignored_rows(repo, board))
    gated = _gate(repo, command, found, approvals, verify)
    done = _deliver(repo, plan, command, found, results, gated, settings)
    if board is not None and (plan.report or plan.trigger in DASHBOARD_TRIGGERS):
        sync_dashboard(repo, board, found.base, done.results if plan.report else None, commit_sha(repo, found.ref))
    return done


def _gate(repo: Repository, command: BotCommand, found: Target, approvals: dict[str, str | None], verify: VerifyFn):
    """verify(results, sha) with check runs on `sha`, running only what an approval lets run
    (approvals: each fork commit met, and who approved it, None while it waits)."""
    skip = None if command.verify else "`--no-verify` was given"

    def gated(scripts: list[SourceResult], sha: str) -> list[SourceResult]:
        return verify_with_check_runs(repo, sha, scripts, lambda scripts, progress: _verify_approved(
            repo, scripts, skip, (found.fork_head, sha), approvals,
            lambda run, why: verify(command, run, sha, why, progress)))
    return gated


def _deliver(repo: Repository, plan: Plan, command: BotCommand, found: Target, results: list[SourceResult],
             gated, settings: Config) -> Published:
    """A port: published as a PR. A verify: the scripts at the ref verified in place (nightly: the
    passing fixes proposed). The results, the reply and the PR."""
    if command.name == "port":
        source = Provenance(found.origin, commit_sha(repo, found.ref), plan.request or plan.reason)
        if found.fork_head is None:
            _stamp_fork_content(repo, results, source.commit, source.request)
        return publish(repo, replace(plan, key=found.key), command, results, found.base, source,
                       found.fork_head is not None, gated, settings)
    results = gated(results, commit_sha(repo, found.ref))
    if plan.report:
        propose_fixes(repo, found.base, results, settings)
    return Published(results, verified_reply(results), None)


def _afterword(approvals: dict[str, str | None], left_out: tuple[str, ...], settings: Config) -> str:
    """What the reply adds: fork commits waiting for an approval, clusters ignored here."""
    return _waiting_text(approvals) + _ignored_text(left_out, settings)


def _waiting_text(approvals: dict[str, str | None]) -> str:
    waiting = _waiting(approvals)
    if not waiting:
        return ""
    return "\n\n" + "\n".join(f"**{waiting_note(sha)}**" for sha in waiting)


def _waiting(approvals: dict[str, str | None]) -> list[str]:
    """The fork commits no maintainer approved yet."""
    return sorted({sha for sha, who in approvals.items() if who is None})


def _ignored_text(left_out: tuple[str, ...], settings: Config) -> str:
    if not left_out:
        return ""
    return f"\n\nNot ported, ignored here: {', '.join(map(code, left_out))} ({undo(left_out, settings)})."


def _conclude(repo: Repository, plan: Plan, comment, done: Published) -> None:
    """Annotations, the comment's reaction (🚀 only when done as asked and nothing failed), the reply
    and the job summary."""
    log_annotations(done.results)
    if comment is not None:
        react(comment, "confused" if done.refused or failing(done.results) else "rocket")
    if plan.issue_number is not None:
        reply(repo, plan, done.message)
    write_job_summary(render_pr_body(done.results))


def _stamp_fork_content(repo: Repository, results: list[SourceResult], ref: str, request: str) -> None:
    """Ports of a script a fork wrote (a merged PR's, or a fork's port ported again) carry that fork
    commit's stamp, as a fork PR's own ports do: verified, now and nightly, only once it is approved."""
    for result in results:
        merged = fork_source(repo, result["source"], ref, request)
        for c in result["clusters"] if merged else ():
            c["content"] = stamp(c["content"], merged)


def _answered(repo: Repository, plan: Plan, comment, message: str, ok: bool = True) -> Done:
    """A request done without porting (approve, ignore): rocket (confused when refused), and the reply."""
    if comment is not None:
        react(comment, "rocket" if ok else "confused")
    reply(repo, plan, message)
    return Done([])


def _recreated(command: BotCommand, found: Target, state: State) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The clusters and sources asked for; `/maple recreate` without them takes the PR's."""
    clusters, sources = command.clusters, found.sources
    if not command.recreate:
        return clusters, sources
    clusters = clusters or _state_clusters(state)
    sources = sources or tuple(r["source"] for r in state.results)
    if not clusters:
        raise MapleError("Nothing to recreate here: name the clusters, e.g. `/maple recreate perlmutter`.", exit_code=2)
    return clusters, sources


def _state_clusters(state: State) -> tuple[str, ...]:
    """The clusters the bot's PR was ported to, in first-seen order."""
    return tuple(dict.fromkeys(c["cluster"] for r in state.results for c in r["clusters"]))


def _not_ignored(command: BotCommand, asked: tuple[tuple[str, ...], tuple[str, ...]], skip: set[str],
                 settings: Config) -> tuple[str, ...]:
    """The sources not ignored; refused when everything asked for (`asked`: clusters, sources) is."""
    clusters, sources = asked
    if command.source in skip or not set(clusters) - skip:
        ignored = tuple(sorted(skip & ({command.source} | set(clusters))))
        raise MapleError(f"Everything asked for is ignored here ({', '.join(map(code, ignored))}): "
                         f"{undo(ignored, settings)}.", exit_code=2)
    kept = _outside(sources, skip)
    if sources and not kept:  # no sources would mean every tracked script
        raise MapleError(f"Every script asked for is ignored here ({', '.join(map(code, sources))}): "
                         f"{undo(sources, settings)}.", exit_code=2)
    return kept


def _outside(names: tuple[str, ...], skip: set[str]) -> tuple[str, ...]:
    """`names` without those in `skip`, in order."""
    return tuple(n for n in names if n not in skip)


def _narrowed(repo: Repository, plan: Plan, command: BotCommand, found: Target, settings: Config,
              ) -> tuple[BotCommand, tuple[str, ...], tuple[str, ...]] | None:
    """The command and sources without what is ignored (settings, `/maple ignore`, a closed PR's
    scripts on push), and what was left out; `/maple recreate` without clusters takes the PR's, and
    its scripts when none is named. None: a push or nightly that finds everything ignored."""
    if command.name != "port":
        return command, found.sources, ()
    automatic = plan.trigger in AUTOMATIC
    state = earlier_state(repo, found.key, found.base, automatic)
    clusters, sources = _recreated(command, found, state)
    skip = set(settings.ignore) | set(state.ignore)
    try:
        kept = _not_ignored(command, (clusters, sources), skip, settings)
    except MapleError:
        if automatic:  # nobody asked: nothing to say
            return None
        raise
    return replace(command, clusters=_outside(clusters, skip)), kept, tuple(c for c in clusters if c in skip)


def _verify_approved(repo: Repository, results: list[SourceResult], skip: str | None,
                     at: tuple[str | None, str], approvals: dict[str, str | None],
                     verify: Callable[[list[SourceResult], str | None], list[SourceResult]]) -> list[SourceResult]:
    """`results` verified at commit at[1], except those that would run content no maintainer
    approved (a fork PR's head at[0] not approved; else runs.held): these are skipped, saying why,
    and never reach `verify` (so no backend runs them). `approvals` collects {commit: approver or None}."""
    if skip is not None:
        return verify(results, skip)
    held_notes = _held(repo, results, at, approvals)
    verified = _verify_allowed(results, held_notes, verify)
    for i, note in held_notes.items():
        for c in results[i]["clusters"]:
            c.update(verification="skipped", note=note)
    return verified


def _held(repo: Repository, results: list[SourceResult], at: tuple[str | None, str],
          approvals: dict[str, str | None]) -> dict[int, str]:
    """{index: why} of the results that may not run yet."""
    fork_head, sha = at
    asked, notes = Approvals(repo, approvals), {}
    for i, result in enumerate(results):
        if fork_head is not None:
            if not asked.approved(fork_head):
                notes[i] = waiting_note(fork_head)
            continue
        skip = {str(result["intent"].get("entrypoint") or "")}
        waiting = [h for c in result["clusters"]
                   for h in held(asked, sha, c["path"], c["content"], run_set(repo, sha, c["path"], c["content"], skip))]
        if waiting:
            notes[i] = held_note(waiting, sha)
    return notes


def _verify_allowed(results: list[SourceResult], waiting: dict[int, str],
                    verify: Callable[[list[SourceResult], str | None], list[SourceResult]]) -> list[SourceResult]:
    """The results not held verified (verify is not called when all are held), the held ones as they
    were, in the original order."""
    allowed = [r for i, r in enumerate(results) if i not in waiting]
    verified = iter(verify(allowed, None) if allowed else [])
    return [results[i] if i in waiting else next(verified) for i in range(len(results))]
