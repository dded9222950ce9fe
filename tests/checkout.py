"""A job read or ported inside a checkout of files written for the test (one home for the tests'
`read` and `ported` helpers)."""

from pathlib import Path

from maple_ci.extract import extract_script
from maple_ci.intent import JobIntent
from maple_ci.port import port


def read_with_files(text: str, tmp_path: Path, files: dict) -> JobIntent:
    """The intent of job script `text` in `tmp_path`, holding `files` (path -> text)."""
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    return extract_script(text, tmp_path, "job.sh", tmp_path)


def ported_once(tmp_path: Path, text: str, target: str) -> tuple[Path, str]:
    """(the script run.sh holding `text`, its port to `target`) in a checkout with fit.py; the port must succeed."""
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "fit.py").write_text("print(1)\n")
    path = tmp_path / "run.sh"
    path.write_text(text)
    _, [result] = port(str(path), [target], tmp_path / "out")
    assert result.status == "ok", result.checks
    return path, result.script
