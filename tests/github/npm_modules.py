"""Where the npm test tooling lives: tests/github/node_modules, from package-lock.json."""

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def node_module(path: str) -> Path:
    found = HERE / "node_modules" / path
    if not found.exists():
        pytest.fail(f"{found} is missing: run `npm ci --prefix tests/github` first")
    return found
