"""LanceDB tables of embedded rows, cached on disk and rebuilt when their source content changes.

Used by retrieval (launch templates) and debugging (known errors): both build a table once per
content hash and then only query it.
"""

import os
from typing import Callable

os.environ.setdefault("LANCEDB_LOG", "error")  # lance warns on every table it creates
import lancedb  # noqa: E402
import pyarrow as pa  # noqa: E402

from .embedding import DIMENSION, embed  # noqa: E402
from .paths import data_dir  # noqa: E402


def _connect():
    return lancedb.connect(str(data_dir() / "lancedb"))


def cached_table(name: str, content_hash: str, build_rows: Callable[[], list[dict]]):
    """Open table `<name>_<hash>`, building it from `build_rows()` if absent.

    Each row is a dict of scalar columns plus "text", the string that is embedded into "vector".
    Tables of the same name with another hash are stale and are dropped.
    """
    db = _connect()
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
        if stale.startswith(f"{name}_") and stale != table_name:
            db.drop_table(stale)
    return table
