"""Fixtures for the GitHub layer: real webhook payloads (npm @octokit/webhooks-examples) and the fake.

The npm packages come from tests/github/package-lock.json: `npm ci --prefix tests/github`.
"""

import copy
import json

import pytest
from fake_github import FakeGitHub
from npm_modules import node_module
from scenarios import SCRIPT

from maple_ci.github.delivery import connect


@pytest.fixture(scope="session")
def _webhook_examples() -> dict[str, list[dict]]:
    examples = json.loads(node_module("@octokit/webhooks-examples/api.github.com/index.json").read_text())
    return {event["name"]: event["examples"] for event in examples}


@pytest.fixture
def webhook(_webhook_examples):
    """webhook(name, **match): a fresh copy of the first recorded payload of that event whose
    top-level fields equal `match` (e.g. action="created")."""

    def pick(name: str, **match) -> dict:
        for example in _webhook_examples[name]:
            if all(example.get(k) == v for k, v in match.items()):
                return copy.deepcopy(example)
        raise LookupError(f"no {name} example with {match}")

    return pick


@pytest.fixture
def fake():
    with FakeGitHub() as server:
        yield server


@pytest.fixture
def repo(fake):
    return connect("ghs_secret", fake.base_url, pace=False).get_repo(f"{fake.owner}/{fake.name}")


@pytest.fixture
def source_pr(fake):
    """PR #1: branch `feature` adds jobs/train.sh; Codertocat (the recorded commenter) may write."""
    fake.refs["heads/feature"] = fake.commit_files({"jobs/train.sh": SCRIPT}, [fake.refs["heads/main"]], "add train.sh")
    fake.permissions["Codertocat"] = "write"
    return fake.open_pull("feature", "main")
