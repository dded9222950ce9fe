"""The shipped action and workflows stay clean under zizmor, actionlint and GitHub's and GitLab's
own schemas (all offline), and keep the structure the security review asked for (issue 10)."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
ACTION = REPO / "action.yml"
WORKFLOWS = sorted((REPO / "workflows" / "github").glob("*.yml"))
GITLAB_CI = REPO / "workflows" / "gitlab" / "maple-verify.gitlab-ci.yml"
FULL_SHA = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}\s+# v\d+\.\d+\.\d+", re.M)


def lint(*command: str) -> None:
    if shutil.which(command[0]) is None:
        pytest.fail(f"{command[0]} is not installed; `pip install -e '.[test]'` installs it")
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(command)}:\n{proc.stdout}{proc.stderr}"


def test_zizmor_finds_nothing_unjustified():
    # Every remaining finding carries a `# zizmor: ignore[...]` comment with its reason beside it.
    lint("zizmor", "--offline", "--no-progress", str(ACTION), *map(str, WORKFLOWS))


def test_actionlint_is_clean():
    lint("actionlint", "-no-color", *map(str, WORKFLOWS))


@pytest.mark.parametrize("schema, files", [("vendor.github-workflows", WORKFLOWS), ("vendor.github-actions", [ACTION])])
def test_files_match_the_vendored_schemas(schema, files):
    lint("check-jsonschema", "--builtin-schema", schema, *map(str, files))


def test_the_gitlab_ci_file_matches_gitlabs_schema_document_by_document(tmp_path):
    # A CI file with `spec:inputs` is two YAML documents (the header, then the jobs); the schema checks each.
    documents = GITLAB_CI.read_text().split("\n---\n")
    assert len(documents) == 2 and "spec" in yaml.safe_load(documents[0])
    for i, document in enumerate(documents):
        (tmp_path / f"{i}.yml").write_text(document)
    lint("check-jsonschema", "--builtin-schema", "vendor.gitlab-ci", *(str(tmp_path / f"{i}.yml") for i in range(2)))


def uses(text: str) -> list[str]:
    return re.findall(r"^\s*-?\s*uses:\s*(.+)$", text, re.M)


def test_every_third_party_action_is_pinned_by_full_sha_with_its_version():
    for path in [ACTION, *WORKFLOWS]:
        for ref in uses(path.read_text()):
            if ref.startswith("maple-ci/maple-ci@"):  # the user pins this one (docs/security.md)
                assert "zizmor: ignore[unpinned-uses]" in ref and "SHA" in ref, ref
            else:
                assert FULL_SHA.match(ref), f"{path.name}: {ref} is not pinned by full commit SHA with a version comment"


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_jobs_use_the_protected_environment_and_keep_no_token_in_git_config(workflow):
    for job in yaml.safe_load(workflow.read_text())["jobs"].values():
        if not any(step.get("uses", "").startswith("maple-ci/maple-ci@") for step in job["steps"]):
            # No secret, no write token; the refusal reply (issue 28) may comment and nothing else.
            assert "environment" not in job and job["permissions"] in ({}, {"issues": "write", "pull-requests": "write"})
            continue
        if job.get("permissions") == {}:  # the trace job (issue 25 F): runs script content, so holds nothing
            assert "environment" not in job and "secrets." not in yaml.safe_dump(job)
        else:
            assert job["environment"] == "maple"  # the MAPLE_GITLAB_* secrets live only there
        checkout = [step for step in job["steps"] if step.get("uses", "").startswith("actions/checkout@")]
        assert checkout and all(step["with"]["persist-credentials"] is False for step in checkout)


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_job_has_a_timeout(workflow):
    # GitHub's default is 6 hours, during which a stuck run holds its concurrency group.
    for job in yaml.safe_load(workflow.read_text())["jobs"].values():
        assert 0 < job["timeout-minutes"] <= 150


def test_comment_requests_from_outsiders_start_nothing_and_only_writers_join_the_queue():
    jobs = yaml.safe_load((REPO / "workflows" / "github" / "maple-comment.yml").read_text())["jobs"]
    assert jobs["authorize"]["if"].startswith("contains(fromJSON('[\"OWNER\", \"MEMBER\", \"COLLABORATOR\"]'), "
                                              "github.event.comment.author_association)")
    assert "concurrency" not in jobs["authorize"]  # tests/github/test_github_security.py runs its step
    assert jobs["maple"]["needs"] == "authorize" and jobs["maple"]["if"] == "needs.authorize.outputs.write == 'true'"
    assert jobs["maple"]["concurrency"] == {"group": "maple-pr-${{ github.event.issue.number }}", "cancel-in-progress": False}
    # Issue 28: whoever asked without write access is answered (the `refuse` job), not skipped in silence;
    # that job may only comment, and waits in no queue a maintainer's request waits in.
    refuse = jobs["refuse"]
    assert refuse["needs"] == "authorize" and "needs.authorize.result == 'skipped'" in refuse["if"]
    assert "needs.authorize.outputs.write != 'true'" in refuse["if"] and refuse["if"].startswith("!cancelled()")
    assert refuse["permissions"] == {"issues": "write", "pull-requests": "write"} and "concurrency" not in refuse
    assert "secrets." not in yaml.safe_dump(refuse) and "environment" not in refuse


def test_the_trace_runs_in_a_job_without_permissions_or_secrets_and_its_result_is_checked_in_another():
    # Issue 25 F: fork content is traced only in a job with `permissions: {}` and no secrets, only on
    # the commit the privileged job found approved; its result reaches the check run through a job
    # that may write checks and nothing else.
    jobs = yaml.safe_load((REPO / "workflows" / "github" / "maple-comment.yml").read_text())["jobs"]
    trace, report = jobs["trace"], jobs["trace-report"]
    assert trace["permissions"] == {} and "environment" not in trace and "secrets." not in yaml.safe_dump(trace)
    assert trace["needs"] == "maple" and trace["if"] == "needs.maple.outputs.trace-request != ''"
    [checkout] = [step for step in trace["steps"] if step.get("uses", "").startswith("actions/checkout@")]
    assert checkout["with"]["ref"] == "${{ fromJSON(needs.maple.outputs.trace-request).commit }}"
    [action] = [step for step in trace["steps"] if step.get("uses", "").startswith("maple-ci/maple-ci@")]
    assert action["with"]["mode"] == "trace" and action["with"]["github-token"] == ""
    assert report["permissions"] == {"checks": "write"} and report["needs"] == ["maple", "trace"]
    [action] = [step for step in report["steps"] if step.get("uses", "").startswith("maple-ci/maple-ci@")]
    assert action["with"] == {"mode": "trace-report", "trace-request": "${{ needs.maple.outputs.trace-request }}",
                              "trace-result": "${{ needs.trace.outputs.trace-result }}"}
    assert jobs["maple"]["outputs"] == {"trace-request": "${{ steps.maple.outputs.trace-request }}"}


def test_push_and_nightly_wait_in_queues_of_their_own():
    # A concurrency group keeps one waiting run and cancels the one it replaces: one group for both
    # let a push cancel a waiting nightly run and the reverse.
    groups = {name: yaml.safe_load((REPO / "workflows" / "github" / name).read_text())["jobs"]["maple"]["concurrency"]
              for name in ("maple-push.yml", "maple-nightly.yml")}
    assert groups["maple-push.yml"]["group"] != groups["maple-nightly.yml"]["group"]
    assert all(group["cancel-in-progress"] is False for group in groups.values())


def test_the_action_installs_only_hash_checked_pins_and_reports_timings():
    steps = yaml.safe_load(ACTION.read_text())["runs"]["steps"]
    [install] = [step for step in steps if step.get("id") == "install"]
    assert "--require-hashes" in install["run"] and "requirements/action.txt" in install["run"]
    assert "--no-deps --no-build-isolation" in install["run"]  # maple-ci itself pulls nothing unpinned
    assert steps[0]["with"]["cache-dependency-path"].endswith("/requirements/action.txt")
    lock = (REPO / "requirements" / "action.txt").read_text()
    pins = re.findall(r"^([a-z0-9._-]+)==(\S+) \\\n\s+--hash=sha256:[0-9a-f]{64}", lock, re.M)
    assert len(pins) == len(re.findall(r"^[a-z0-9._-]+==", lock, re.M)) > 20  # every pin is hashed
    assert any(name == "hatchling" for name, _ in pins)
    # A lean install: the embedding model's stack is the `embeddings` extra, not the action's.
    assert not {"torch", "sentence-transformers", "transformers", "triton"} & {name for name, _ in pins}
    assert not any(name.startswith("nvidia-") for name, _ in pins)
    assert "GITHUB_STEP_SUMMARY" in steps[-1]["run"] and steps[-1]["if"] == "always()"
