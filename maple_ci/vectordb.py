"""LanceDB tables of embedded rows, cached on disk and rebuilt when their source content changes.

Used by retrieval (launch templates) and debugging (known errors): both build a table once per
content hash and then only query it. search() also keeps every answer on disk per table version,
so a query seen before is answered without loading LanceDB or the embedding model, and so is a
common query on a fresh install, from the answers shipped with the package (SHIPPED_ANSWERS).
"""

import gzip
import importlib.util
import json
import os
import sqlite3
import sys
from contextlib import closing
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional

from .paths import data_dir

# Written by `python -m maple_ci.precompute`: the bundled templates table's answers to the common
# retrieval queries: {"version": table version, "rows": [row], "answers": {query key: [[row, distance]]}},
# the version and query keys as search() writes them to searches.sqlite.
SHIPPED_ANSWERS = Path(__file__).with_name("answers.json.gz")


def _import_lancedb():
    """lancedb, without the generated REST client's API modules.

    lancedb imports lance_namespace, which imports the models of lance_namespace_urllib3_client;
    that package's __init__ also imports its nine generated API modules, 1.1 s of the 1.9 s that
    `import lancedb` takes (lancedb 0.40, lance-namespace 0.13; every release so far), for the REST
    namespace that a local database never talks to. So the package is registered without running
    its __init__: its submodules (the models) still import from the real folder, and the first
    attribute asked of the package itself runs the __init__ after all, so code that wants the API
    classes gets them and only pays then."""
    name = "lance_namespace_urllib3_client"
    spec = None if name in sys.modules else importlib.util.find_spec(name)
    if spec is not None and spec.submodule_search_locations is not None:
        package = importlib.util.module_from_spec(spec)

        def run_init(attribute: str):
            del package.__dict__["__getattr__"]
            spec.loader.exec_module(package)
            return getattr(package, attribute)

        package.__getattr__ = run_init
        sys.modules[name] = package
    try:
        import lancedb
    except ImportError as error:
        from .embedding import not_installed

        raise not_installed("LanceDB") from error
    return lancedb


def connect():
    """The LanceDB database under data_dir() (MAPLE_DATA_DIR)."""
    os.environ.setdefault("LANCEDB_LOG", "error")  # lance warns on every table it creates
    return _import_lancedb().connect(str(data_dir() / "lancedb"))


def _answers() -> sqlite3.Connection:
    connection = sqlite3.connect(data_dir() / "searches.sqlite", timeout=30)
    connection.execute("CREATE TABLE IF NOT EXISTS answers (tbl TEXT, query TEXT, rows TEXT, PRIMARY KEY (tbl, query))")
    return connection


def _version(name: str, content_hash: str) -> str:
    return f"{name}_{content_hash}"


@lru_cache(maxsize=1)
def shipped_answers() -> dict:
    """SHIPPED_ANSWERS as written, or {} when absent (a checkout before its first precompute)."""
    if not SHIPPED_ANSWERS.is_file():
        return {}
    with gzip.open(SHIPPED_ANSWERS, "rt") as file:
        return json.load(file)


def cached_table(name: str, content_hash: str, build_rows: Callable[[], list[dict]]):
    """Open table `<name>_<hash>`, building it from `build_rows()` if absent.

    Each row is a dict of scalar columns plus "text", the string that is embedded into "vector".
    Tables of the same name with another hash are stale and are dropped, with their answers.
    """
    from .embedding import DIMENSION, embed

    db = connect()  # first: on a lean install, LanceDB's absence is the error that says what to install
    import pyarrow as pa  # a dependency of LanceDB
    table_name = _version(name, content_hash)
    existing = set(db.list_tables().tables)
    if table_name in existing:
        return db.open_table(table_name)
    rows = build_rows()
    vectors = embed([row["text"] for row in rows])
    data = pa.Table.from_pylist(rows).append_column(
        "vector", pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIMENSION)
    )
    table = db.create_table(table_name, data=data, mode="overwrite")
    # rsplit, not startswith: "templates" must not drop a table named "templates_extra_<hash>".
    stale = [other for other in existing if other.rsplit("_", 1)[0] == name and other != table_name]
    for other in stale:
        db.drop_table(other)
    with closing(_answers()) as answers, answers:
        answers.executemany("DELETE FROM answers WHERE tbl = ?", [(other,) for other in stale])
    return table


def search(name: str, content_hash: str, build_rows: Callable[[], list[dict]], text: str, columns: list[str],
           where: Optional[str] = None, limit: Optional[int] = None) -> list[dict]:
    """The rows of cached_table(name, ...) nearest to `text` by cosine distance, best first: the
    `columns` and "_distance". `where` (SQL) filters before ranking; limit None: every row it passes.

    A table version never changes once built (new content is a new table), so its answer to a
    query stays right: answers are kept on disk, and a query seen before needs neither LanceDB nor
    the embedding model, which take a second or more to load, far longer than the search. The
    package ships the bundled templates table's answers to common queries: they are used only for
    that exact version, so a user's own library (MAPLE_TEMPLATES_DIR) or a changed template is
    searched afresh, and they spare a first port LanceDB and pyarrow (over 100 MiB to import).
    A shipped answer is kept on disk too: the next run then need not load the whole file."""
    version, query = _version(name, content_hash), json.dumps([text, columns, where, limit])
    with closing(_answers()) as answers:
        known = answers.execute("SELECT rows FROM answers WHERE tbl = ? AND query = ?", (version, query)).fetchone()
    if known:
        return json.loads(known[0])
    shipped = shipped_answers()
    if shipped.get("version") == version and query in shipped["answers"]:
        rows = [{**shipped["rows"][row], "_distance": distance} for row, distance in shipped["answers"][query]]
    else:
        from .embedding import embed

        table = cached_table(name, content_hash, build_rows)
        request = table.search(embed([text])[0]).distance_type("cosine").select(columns)
        if where:
            request = request.where(where, prefilter=True)
        rows = request.limit(table.count_rows() if limit is None else limit).to_list()
    with closing(_answers()) as answers, answers:  # the second `answers` commits
        answers.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?)", (version, query, json.dumps(rows)))
    return rows
