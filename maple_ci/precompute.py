"""Write what ships with the package so that a fresh install ports a common job without PyTorch
and the embedding model (5-10 s) or LanceDB and pyarrow (116 MiB to import):

    python -m maple_ci.precompute

embedding.SHIPPED, the vectors: every bundled template's text and known-error example (the tables a
first port or debug builds), and the retrieval queries (JobIntent.description()) of the common
intents: the benchmark's cases, the bundled examples and the common job shapes below. Any other
text is embedded by the model when first seen and then cached on disk.

vectordb.SHIPPED_ANSWERS, the answers: the bundled templates table's answer to every common intent's
search on every profiled cluster, found by the real retrieval (LanceDB) in a scratch data dir. They
are used only while the templates are these ones; any other query or library goes to LanceDB.

Run this after changing templates, cluster profiles, the known errors or description();
tests/test_startup.py fails while a bundled text has no shipped vector or the answers are stale.
"""

import gzip
import itertools
import json
import os
import tempfile
from contextlib import closing
from pathlib import Path

import numpy as np

from . import vectordb
from .embedding import MODEL_ID, SHIPPED, _encode, shipped
from .errors import MapleError
from .intent import JobIntent
from .vectordb import SHIPPED_ANSWERS

# Common shapes beyond the benchmark's: framework -> (strategies, launchers, config kinds passed).
COMMON_JOBS = {
    "pytorch": ((None, "ddp", "fsdp"), ("torchrun", "srun", "mpiexec", "python"), ((),)),
    "deepspeed": ((None, "zero2", "zero3"), ("deepspeed", "srun", "torchrun"), ((), ("deepspeed",))),
    "accelerate": ((None, "ddp", "fsdp"), ("accelerate",), ((), ("accelerate",))),
    "megatron": ((None, "tp", "3d"), ("torchrun", "srun", "deepspeed"), ((),)),
    "lightning": (("ddp", "fsdp"), ("srun", "torchrun", "python"), ((),)),
}
COMMON_NODES = (None, 1, 2, 4, 8)  # None: the size is chosen at submit time
COMMON_GPUS = (None, 4, 8)
DIGITS = 6  # of a shipped distance: scores are compared and shown far coarser


def common_intents() -> list[JobIntent]:
    """The jobs a port most likely sees, in a stable order: the benchmark's cases, the bundled
    examples, then every combination of COMMON_JOBS, COMMON_NODES and COMMON_GPUS."""
    from .bench import load_cases
    from .extract import extract, load_source
    from .paths import bundled

    intents = [extract(case.text, case.id) for case in load_cases()]
    for path in sorted(bundled("examples").iterdir()):
        if path.suffix in (".sh", ".sbatch", ".pbs"):
            name, text = load_source(str(path))
            intents.append(extract(text, name))
    for framework, (strategies, launchers, config_kinds) in COMMON_JOBS.items():
        for strategy, launcher, configs, nodes, gpus in itertools.product(
                strategies, launchers, config_kinds, COMMON_NODES, COMMON_GPUS):
            intents.append(JobIntent(framework=framework, strategy=strategy, launcher=launcher, nodes=nodes,
                                     gpus_per_node=gpus, configs={kind: "config" for kind in configs}))
    return intents


def query_texts() -> list[str]:
    """Retrieval queries worth shipping (the common intents' descriptions), in a stable order."""
    return list(dict.fromkeys(intent.description() for intent in common_intents()))


def bundled_texts() -> list[str]:
    """The texts of the bundled template library, known-error knowledge base and centers' known issues."""
    from .debug import load_kb
    from .debug.retrieval import load_passages, passage_text
    from .library import load_templates

    return ([t.embedding_text() for t in load_templates()] + [x for entry in load_kb() for x in entry.examples]
            + [passage_text(p) for p in load_passages()])


def write_vectors(path: Path = SHIPPED) -> int:
    texts = list(dict.fromkeys(bundled_texts() + query_texts()))
    vectors = _encode(texts).astype(np.float16)
    header = np.frombuffer(json.dumps({"model": MODEL_ID, "texts": texts}).encode(), dtype=np.uint8)
    with open(path, "wb") as file:  # np.savez_compressed would add ".npz" to a name without it
        np.savez_compressed(file, header=header, vectors=vectors)
    shipped.cache_clear()  # the answers are searched with these vectors
    return len(texts)


def write_answers() -> int:
    """Retrieve every common intent on every cluster in a scratch data dir, then ship the answers
    that its searches.sqlite holds for the templates table: rows once, answers as (row, distance)."""
    from .library import library_hash
    from .profiles import load_profiles
    from .retrieve import TABLE, retrieve

    # Every search goes to LanceDB: no answers of the file being replaced, an empty answer cache.
    SHIPPED_ANSWERS.unlink(missing_ok=True)
    vectordb.shipped_answers.cache_clear()
    data_dir = os.environ.get("MAPLE_DATA_DIR")
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["MAPLE_DATA_DIR"] = scratch
        try:
            for intent, cluster in itertools.product(common_intents(), sorted(load_profiles())):
                try:
                    retrieve(intent, cluster)
                except MapleError:  # no template for this job there; its empty answer is kept all the same
                    pass
            version = vectordb._version(TABLE, library_hash())
            with closing(vectordb._answers()) as answers:
                found = answers.execute("SELECT query, rows FROM answers WHERE tbl = ? ORDER BY query",
                                        (version,)).fetchall()
        finally:
            os.environ.pop("MAPLE_DATA_DIR")
            if data_dir is not None:
                os.environ["MAPLE_DATA_DIR"] = data_dir
    rows: dict[str, int] = {}  # a row's JSON -> its index
    by_query = {}
    for query, answer in found:
        by_query[query] = [
            [rows.setdefault(json.dumps({k: v for k, v in row.items() if k != "_distance"}), len(rows)),
             round(row["_distance"], DIGITS)]
            for row in json.loads(answer)]
    content = {"version": version, "rows": [json.loads(row) for row in rows], "answers": by_query}
    # mtime=0: the same answers make the same file
    SHIPPED_ANSWERS.write_bytes(gzip.compress(json.dumps(content, separators=(",", ":")).encode(), compresslevel=9, mtime=0))
    return len(by_query)


if __name__ == "__main__":
    os.environ.pop("MAPLE_TEMPLATES_DIR", None)  # the bundled library, not a user's
    count = write_vectors()
    print(f"{count} vectors -> {SHIPPED} ({SHIPPED.stat().st_size // 1024} KiB)")
    count = write_answers()
    print(f"{count} answers -> {SHIPPED_ANSWERS} ({SHIPPED_ANSWERS.stat().st_size // 1024} KiB)")
