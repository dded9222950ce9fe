"""Write the vectors shipped with the package (embedding.SHIPPED), so that a fresh install ports a
script without loading PyTorch and the embedding model (5-10 s) whenever its query is a common one.

    python -m maple_ci.precompute

What is embedded: every bundled template's text and known-error example (the tables a first port
or debug builds), and the retrieval queries (JobIntent.description()) of the benchmark's cases, of
the bundled examples and of the common job shapes below. Any other text is embedded by the model
when first seen and then cached on disk. Run this after changing templates, the known errors or
description(); tests/test_startup.py fails while a bundled text has no shipped vector.
"""

import itertools
import json
import os
from pathlib import Path

import numpy as np

from .embedding import MODEL_ID, SHIPPED, _encode
from .intent import JobIntent

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


def query_texts() -> list[str]:
    """Retrieval queries worth shipping, in a stable order."""
    from .bench import load_cases
    from .extract import extract, load_source
    from .paths import bundled

    queries = [extract(case.text, case.id).description() for case in load_cases()]
    for path in sorted(bundled("examples").iterdir()):
        if path.suffix in (".sh", ".sbatch", ".pbs"):
            name, text = load_source(str(path))
            queries.append(extract(text, name).description())
    for framework, (strategies, launchers, config_kinds) in COMMON_JOBS.items():
        for strategy, launcher, configs, nodes, gpus in itertools.product(
                strategies, launchers, config_kinds, COMMON_NODES, COMMON_GPUS):
            queries.append(JobIntent(framework=framework, strategy=strategy, launcher=launcher, nodes=nodes,
                                     gpus_per_node=gpus, configs={kind: "config" for kind in configs}).description())
    return list(dict.fromkeys(queries))


def bundled_texts() -> list[str]:
    """The texts of the bundled template library and known-error knowledge base."""
    from .debug import load_kb
    from .library import load_templates

    return [t.embedding_text() for t in load_templates()] + [x for entry in load_kb() for x in entry.examples]


def write(path: Path = SHIPPED) -> int:
    os.environ.pop("MAPLE_TEMPLATES_DIR", None)  # the bundled library, not a user's
    texts = list(dict.fromkeys(bundled_texts() + query_texts()))
    vectors = _encode(texts).astype(np.float16)
    header = np.frombuffer(json.dumps({"model": MODEL_ID, "texts": texts}).encode(), dtype=np.uint8)
    with open(path, "wb") as file:  # np.savez_compressed would add ".npz" to a name without it
        np.savez_compressed(file, header=header, vectors=vectors)
    return len(texts)


if __name__ == "__main__":
    count = write()
    print(f"{count} vectors -> {SHIPPED} ({SHIPPED.stat().st_size // 1024} KiB)")
