"""LanceDB tables of embedded rows, cached on disk and rebuilt when their source content changes.

Used by retrieval (launch templates) and debugging (known errors): both build a table once per
content hash and then only query it.
"""

import os
from typing import Callable

import pyarrow as pa

from .embedding import DIMENSION, embed
from .paths import data_dir


def connect():
    """The LanceDB database under data_dir() (MAPLE_DATA_DIR)."""
    os.environ.setdefault("LANCEDB_LOG", "error")  # lance warns on every table it creates
    # Imported here, not at module level: lancedb takes ~1.4 s to import, and `maple templates
    # list|show` import maple_ci.retrieve (hence this module) without ever opening a table.
    import lancedb

    return lancedb.connect(str(data_dir() / "lancedb"))


def cached_table(name: str, content_hash: str, build_rows: Callable[[], list[dict]]):
    """Open table `<name>_<hash>`, building it from `build_rows()` if absent.

    Each row is a dict of scalar columns plus "text", the string that is embedded into "vector".
    Tables of the same name with another hash are stale and are dropped.
    """
    db = connect()
    table_name = f"{name}_{content_hash}"
    existing = set(db.list_tables().tables)
    if table_name in existing:
        return db.open_table(table_name)
    rows = build_rows()
    vectors = embed([row["text"] for row in rows])
    data = pa.Table.from_pylist(rows).append_column(
        "vector", pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIMENSION)
    )
    table = db.create_table(table_name, data=data, mode="overwrite")
    for stale in existing:
        # rsplit, not startswith: "templates" must not drop a table named "templates_extra_<hash>".
        if stale.rsplit("_", 1)[0] == name and stale != table_name:
            db.drop_table(stale)
    return table
