"""Fast to start (issue 11): each command imports only what it uses, a port of a common job needs
no embedding model and no LanceDB, the vectors and search answers shipped with the package cover
the bundled texts and common jobs, and tools are found beside the running Python. Timings are the
latency benchmark's job, not these tests'."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from maple_ci import embedding, retrieve, vectordb
from maple_ci.bench import load_cases
from maple_ci.cli import main
from maple_ci.debug import load_kb
from maple_ci.errors import MapleError
from maple_ci.extract import extract
from maple_ci.library import library_hash, load_templates
from maple_ci.precompute import bundled_texts, common_intents, query_texts
from maple_ci.profiles import load_profiles
from maple_ci.verify import static
from venvs import nested_venv

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "perlmutter_torchrun_ddp.sbatch"
HEAVY = ("lancedb", "torch", "transformers", "sentence_transformers")
REST_API = "lance_namespace_urllib3_client.api"

# Runs `maple <args>` in a fresh interpreter and prints which of the modules named in argv[1] it imported.
PROBE = """
import json, sys
from maple_ci.cli import main
watched, sys.argv = json.loads(sys.argv[1]), ["maple", *sys.argv[2:]]
try:
    main()
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "imported": [m for m in watched if m in sys.modules]}), file=sys.stderr)
"""


def imported_by(args: list[str], data_dir: Path, watched=HEAVY + (REST_API,), python: str = sys.executable,
                env: dict | None = None) -> dict:
    environment = {**os.environ}
    environment.pop("MAPLE_TEMPLATES_DIR", None)
    environment |= {**(env or {}), "MAPLE_DATA_DIR": str(data_dir)}
    done = subprocess.run([python, "-c", PROBE, json.dumps(watched), *map(str, args)], env=environment,
                          capture_output=True, text=True, timeout=300)
    return json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [
    ["--help"], ["clusters"], ["templates", "list"], ["templates", "show", "polaris-pytorch-ddp-torchrun"],
    ["extract", EXAMPLE], ["extract", "train.py on two nodes with 4 GPUs each"],
])
def test_commands_without_retrieval_import_no_database_or_model(args, tmp_path):
    assert imported_by(args, tmp_path) == {"code": 0, "imported": []}


def test_a_first_port_needs_neither_the_database_nor_the_model_and_writes_what_lancedb_would(tmp_path, monkeypatch):
    port = ["port", EXAMPLE, "--to", "all", "--out", tmp_path / "shipped"]
    # Empty caches: the shipped answers serve every cluster; nothing is embedded or searched.
    assert imported_by(port, tmp_path / "data") == {"code": 0, "imported": []}
    assert not (tmp_path / "data" / "embeddings.sqlite").exists()  # nothing was left to the model
    with closing(sqlite3.connect(tmp_path / "data" / "searches.sqlite")) as answers:  # the next port's, so
        assert answers.execute("SELECT count(*) FROM answers").fetchone() == (len(load_profiles()),)  # it need not load it
    assert imported_by(port, tmp_path / "data") == {"code": 0, "imported": []}
    # The same port searched in LanceDB writes the same scripts (but for the output folder named in them).
    monkeypatch.setattr(vectordb, "shipped_answers", lambda: {})
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path / "lancedb-data"))
    monkeypatch.setattr("sys.argv", ["maple", *map(str, port[:-1]), str(tmp_path / "searched")])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 0
    assert (tmp_path / "lancedb-data" / "lancedb").is_dir()
    shipped = sorted(p.relative_to(tmp_path / "shipped") for p in (tmp_path / "shipped").rglob("*") if p.is_file())
    searched = sorted(p.relative_to(tmp_path / "searched") for p in (tmp_path / "searched").rglob("*") if p.is_file())
    assert {path.parts[0] for path in shipped} == set(load_profiles()) and shipped == searched
    for path in shipped:
        written = (tmp_path / "shipped" / path).read_text().replace(str(tmp_path / "shipped"), "OUT")
        assert written == (tmp_path / "searched" / path).read_text().replace(str(tmp_path / "searched"), "OUT")


def test_a_new_query_loads_the_model_once_then_is_cached(tmp_path):
    request = ["port", "train.py on 3 nodes with 4 GPUs each, deepspeed zero1", "--to", "polaris", "--out", tmp_path]
    assert extract(request[1]).description() not in embedding.shipped()
    first = imported_by(request, tmp_path / "data")
    assert "torch" in first["imported"] and "lancedb" in first["imported"]
    assert imported_by(request, tmp_path / "data")["imported"] == []


def test_lancedb_loads_without_the_rest_client_api_which_still_loads_when_asked_for():
    probe = """
import sys
from maple_ci.vectordb import _import_lancedb
_import_lancedb()
before = "lance_namespace_urllib3_client.api" in sys.modules
import lance_namespace_urllib3_client as client
print(before, client.ApiClient.__name__, "lance_namespace_urllib3_client.api" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "ApiClient", "True"]


def test_shipped_vectors_cover_the_bundled_library_the_known_errors_and_the_benchmark(monkeypatch):
    """Fails when a template, a known-error example or description() changed without
    `python -m maple_ci.precompute`: a fresh install would then load the model for them."""
    monkeypatch.delenv("MAPLE_TEMPLATES_DIR", raising=False)
    shipped = embedding.shipped()
    texts = [t.embedding_text() for t in load_templates()] + [x for e in load_kb() for x in e.examples]
    texts += [extract(case.text, case.id).description() for case in load_cases()]
    missing = [text for text in texts if text not in shipped]
    assert not missing, f"run `python -m maple_ci.precompute`; no shipped vector for {missing[:5]}"
    assert set(bundled_texts()) <= set(shipped) and set(query_texts()) <= set(shipped)
    # half precision keeps it small: 1.2 MB for 1679 texts since the message catalogues (issue 27) came
    assert embedding.SHIPPED.stat().st_size < 1536 * 1024


def test_shipped_vectors_are_the_models_own():
    shipped = embedding.shipped()
    texts = list(shipped)[::60]
    fresh = embedding._encode(texts)
    stored = np.stack([shipped[t] for t in texts])
    assert np.allclose(np.linalg.norm(stored, axis=1), 1.0, atol=1e-5)
    assert (np.sum(fresh * stored, axis=1) > 0.9999).all()  # only half precision's rounding between them


def test_shipped_answers_are_the_current_librarys_and_cover_every_common_intent_on_every_cluster(monkeypatch):
    """Fails when a template or cluster profile changed without `python -m maple_ci.precompute`:
    a fresh install would then build the table in LanceDB for its first port."""
    monkeypatch.delenv("MAPLE_TEMPLATES_DIR", raising=False)
    version = vectordb._version(retrieve.TABLE, library_hash())
    assert vectordb.shipped_answers().get("version") == version, "run `python -m maple_ci.precompute`"
    assert vectordb.SHIPPED_ANSWERS.stat().st_size < 1024 * 1024

    def no_lancedb(*args):
        raise AssertionError("a common query went to LanceDB")

    monkeypatch.setattr(vectordb, "cached_table", no_lancedb)
    monkeypatch.setattr(retrieve, "library_hash", lambda: version.split("_")[-1])  # hashing 20,000 times is slow
    monkeypatch.setattr(vectordb, "_answers", _empty_answers)  # nor a local answer
    intents, clusters, answered = common_intents(), sorted(load_profiles()), 0
    for intent in intents:
        for cluster in clusters:
            try:
                answered += len(retrieve.retrieve(intent, cluster)) > 0
            except MapleError:  # no template for this job there, which the shipped answer says too
                pass
    assert answered > len(intents) * len(clusters) // 2  # most jobs have a template on most clusters


def _empty_answers() -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE answers (tbl TEXT, query TEXT, rows TEXT, PRIMARY KEY (tbl, query))")
    return connection


def test_a_shipped_answer_is_what_lancedb_answers(monkeypatch, tmp_path):
    monkeypatch.delenv("MAPLE_TEMPLATES_DIR", raising=False)
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path))
    shipped = vectordb.shipped_answers()
    queries = sorted(shipped["answers"])[::997]
    monkeypatch.setattr(vectordb, "shipped_answers", lambda: {})
    for query in queries:
        text, columns, where, limit = json.loads(query)
        searched = vectordb.search(retrieve.TABLE, library_hash(), retrieve._template_rows, text, columns, where, limit)
        answer = shipped["answers"][query]
        assert [{k: v for k, v in row.items() if k != "_distance"} for row in searched] == \
            [shipped["rows"][row] for row, _ in answer]  # the same rows in the same order
        assert np.allclose([row["_distance"] for row in searched], [distance for _, distance in answer],
                           rtol=0, atol=1e-5)
    assert len(queries) >= 5


def test_a_changed_library_is_searched_in_lancedb_not_answered_from_the_package(tmp_path):
    templates = tmp_path / "templates"
    shutil.copytree(REPO / "templates", templates)
    profile = templates / "clusters" / "polaris.yaml"  # a cluster's template rows live in its profile
    profile.write_text(profile.read_text() + "# changed\n")
    port = ["port", EXAMPLE, "--to", "polaris", "--out", tmp_path / "scripts"]
    # Its table is built from shipped vectors (the template's text is the same); the REST client's API stays out.
    assert imported_by(port, tmp_path / "data", env={"MAPLE_TEMPLATES_DIR": str(templates)}) == \
        {"code": 0, "imported": ["lancedb"]}


def _venv_like(tmp_path: Path, with_shellcheck: bool) -> Path:
    """A venv (venvs.nested_venv) with maybe bin/shellcheck, not on PATH."""
    bin_dir = nested_venv(tmp_path / "venv")
    if with_shellcheck:  # a stand-in that finds nothing, as shellcheck does for a clean script
        (bin_dir / "shellcheck").write_text("#!/bin/sh\ncat > /dev/null\necho '[]'\n")
        (bin_dir / "shellcheck").chmod(0o755)
    return bin_dir


def _path_without_shellcheck(tmp_path: Path) -> str:
    """A PATH that has bash (bash -n runs first) but no shellcheck."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("bash", "sh", "cat"):
        (tools / name).symlink_to(subprocess.run(["which", name], capture_output=True, text=True).stdout.strip())
    return str(tools)


def test_tools_are_found_beside_the_running_python_before_path(tmp_path, monkeypatch):
    bin_dir = _venv_like(tmp_path, with_shellcheck=True)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    monkeypatch.setenv("PATH", _path_without_shellcheck(tmp_path))
    assert static.find_tool("shellcheck") == str(bin_dir / "shellcheck")
    assert static.find_tool("bash") == str(tmp_path / "tools" / "bash")  # then PATH
    assert static.find_tool("no-such-tool") is None


def test_a_port_from_a_venv_not_on_path_runs_the_venvs_shellcheck(tmp_path):
    bin_dir = _venv_like(tmp_path, with_shellcheck=True)
    port = ["port", EXAMPLE, "--to", "polaris", "--out", tmp_path / "scripts", "--json"]
    environment = {**os.environ, "PATH": _path_without_shellcheck(tmp_path), "MAPLE_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([str(bin_dir / "python"), "-m", "maple_ci", *map(str, port)], env=environment,
                          capture_output=True, text=True, timeout=300)
    [result] = json.loads(done.stdout)["results"]
    assert {"name": "shellcheck", "ok": True, "severity": "error", "message": "shellcheck: no warnings",
            "line": None} in result["checks"]


def test_a_missing_linter_is_a_warning_in_the_results_table(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "executable", str(_venv_like(tmp_path, with_shellcheck=False) / "python"))
    monkeypatch.setenv("PATH", _path_without_shellcheck(tmp_path))
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr("sys.argv", ["maple", "port", str(EXAMPLE), "--to", "polaris", "--out", str(tmp_path)])
    with pytest.raises(SystemExit) as exit_info:
        main()
    out = capsys.readouterr().out
    assert exit_info.value.code == 0  # a warning, not a failure
    assert " warning(s)" in out  # counted in the table (other checks may warn too)
    assert "polaris: shellcheck: shellcheck is not installed; shell lint skipped" in out


@pytest.mark.parametrize("module", ["sentence_transformers", "lancedb"])
def test_a_lean_install_says_which_extra_a_new_search_needs(tmp_path, monkeypatch, capsys, module):
    # The action installs neither (requirements/action.txt): a search whose answer does not ship
    # must name the extra, not end in an ImportError.
    monkeypatch.setitem(sys.modules, module, None)  # `import` of it raises ImportError
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(embedding, "shipped", lambda: {})  # nothing shipped, nothing cached: a new search
    monkeypatch.setattr(vectordb, "shipped_answers", lambda: {})
    embedding._model.cache_clear()
    monkeypatch.setattr("sys.argv", ["maple", "templates", "search", "an uncommon job"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    embedding._model.cache_clear()
    assert exit_info.value.code != 0
    assert "pip install 'maple-ci[embeddings]'" in capsys.readouterr().err.replace("\n", "")
