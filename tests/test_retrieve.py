"""Retrieval agent: ranking rule, errors, the on-disk table cache, and the real template library.

Most tests run against a small synthetic library in a tmp dir so they do not depend on the
real templates; the last ones check the real library. The embedding model loads once per
process (embedding._model is cached), and the synthetic table is built once per module.
"""

import shutil
import sqlite3
from collections import defaultdict

import numpy as np
import pytest
import yaml

from maple_ci import embedding, vectordb
from maple_ci import retrieve as retrieve_module
from maple_ci.errors import MapleError
from maple_ci.intent import JobIntent
from maple_ci.library import GENERIC, get_template, library_hash, load_templates
from maple_ci.paths import data_dir
from maple_ci.profiles import load_profiles
from maple_ci.retrieve import best_template, list_templates, retrieve, search
from maple_ci.vectordb import connect

# (cluster, file name, framework, strategy, launcher, description, supported)
SYNTHETIC = [
    # Two descriptions repeat, word for word, the description of an intent whose strategy they do not
    # have, so similarity alone would pick them: alpha-pytorch-ddp for a pytorch fsdp intent
    # (test_stated_strategy_beats_similarity), alpha-accelerate-fsdp for an accelerate intent with
    # no strategy (test_unstated_strategy_defaults_per_framework).
    ("alpha", "pytorch-ddp", "pytorch", "ddp", "torchrun",
     "pytorch fsdp launched with torchrun on 2 nodes with 4 GPUs per node", True),
    ("alpha", "pytorch-ddp-srun", "pytorch", "ddp", "srun", "srun starts one task per GPU.", True),
    ("alpha", "pytorch-fsdp", "pytorch", "fsdp", "torchrun", "Shards parameters, gradients and optimizer state.", True),
    ("alpha", "deepspeed-zero2", "deepspeed", "zero2", "deepspeed", "ZeRO stage 2 partitions optimizer state.", True),
    ("alpha", "deepspeed-zero3", "deepspeed", "zero3", "deepspeed", "ZeRO stage 3 also partitions parameters.", True),
    ("alpha", "accelerate-ddp", "accelerate", "ddp", "accelerate", "accelerate launch, multi-GPU data parallel.", True),
    ("alpha", "accelerate-fsdp", "accelerate", "fsdp", "accelerate",
     "accelerate launched with torchrun on 2 nodes with 4 GPUs per node", True),
    ("beta", "pytorch-ddp", "pytorch", "ddp", "torchrun", "torchrun per node started by srun.", True),
    ("beta", "deepspeed-zero3", "deepspeed", "zero3", "deepspeed", "DeepSpeed ZeRO-3, deepspeed launcher.", False),
]
UNSUPPORTED_REASON = "deepspeed cannot build its ops on beta's compilers"


def _profile(name: str) -> dict:
    return {
        "name": name, "display_name": name.title(), "center": "Test", "docs_url": "https://example.org/",
        "scheduler": "slurm", "cpu_arch": "x86_64", "gpu_vendor": "nvidia", "gpu_model": "A100",
        "gpus_per_node": 4, "devices_per_node": 4, "gpu_memory_gb": 40, "cores_per_node": 64,
        "device": "cuda", "backend": "nccl", "queue_directive": "partition",
        "queues": [{"name": "debug", "max_walltime": "00:30:00", "max_nodes": 8}],
        "account_required": False, "account_example": "abc123", "default_launcher": "srun",
        "frameworks": {"pytorch": {}}, "container": {"runtime": "none"},
    }


def _write_library(root):
    """Three profiles with their template rows (gamma has none), rendered from the Slurm base."""
    (root / "clusters").mkdir(parents=True, exist_ok=True)
    for cluster in ("alpha", "beta", "gamma"):
        rows = [{"id": f"{cluster}-{name}", "framework": framework, "strategy": strategy, "launcher": launcher,
                 "description": description, "supported": supported, "reason": "" if supported else UNSUPPORTED_REASON}
                for row_cluster, name, framework, strategy, launcher, description, supported in SYNTHETIC
                if row_cluster == cluster]
        (root / "clusters" / f"{cluster}.yaml").write_text(yaml.safe_dump({**_profile(cluster), "templates": rows}))
    return root


@pytest.fixture(scope="module")
def synthetic_root(tmp_path_factory):
    return _write_library(tmp_path_factory.mktemp("synthetic") / "templates")


@pytest.fixture
def library(synthetic_root, monkeypatch):
    """The synthetic library with a data dir shared by this module's tests: its table is built once."""
    monkeypatch.setenv("MAPLE_TEMPLATES_DIR", str(synthetic_root))
    monkeypatch.setenv("MAPLE_DATA_DIR", str(synthetic_root.parent / "data"))
    return synthetic_root


@pytest.fixture
def build_count(monkeypatch):
    """How many times the templates table has been built (its rows embedded) during the test."""
    calls = []
    original = retrieve_module._template_rows
    monkeypatch.setattr(retrieve_module, "_template_rows", lambda: calls.append(1) or original())
    return calls


def _intent(**fields) -> JobIntent:
    return JobIntent(**{"launcher": "torchrun", "nodes": 2, "gpus_per_node": 4, **fields})


def _template_tables() -> list[str]:
    return [name for name in connect().list_tables().tables if name.startswith("templates_")]


def test_stated_strategy_beats_similarity(library):
    intent = _intent(framework="pytorch", strategy="fsdp")
    # Precondition: by similarity alone the ddp template wins this query...
    assert search(intent.description(), cluster="alpha", k=1)[0].template.id == "alpha-pytorch-ddp"
    # ...but the strategy the intent states decides.
    ranked = retrieve(intent, "alpha")
    assert [c.template.id for c in ranked] == ["alpha-pytorch-fsdp", "alpha-pytorch-ddp", "alpha-pytorch-ddp-srun"]


@pytest.mark.parametrize(
    "launcher, expected",
    [
        ("srun", "alpha-pytorch-ddp-srun"),
        ("torchrun", "alpha-pytorch-ddp"),
        # No mpiexec template: the per-device srun form wins although the torchrun one reads closer.
        ("mpiexec", "alpha-pytorch-ddp-srun"),
        ("accelerate", "alpha-pytorch-ddp"),
    ],
)
def test_launcher_picks_between_variants_of_a_strategy(library, launcher, expected):
    assert best_template(_intent(framework="pytorch", strategy="ddp", launcher=launcher), "alpha").id == expected


@pytest.mark.parametrize(
    "framework, default, nearest",
    [
        ("pytorch", "alpha-pytorch-ddp", "alpha-pytorch-ddp"),
        ("deepspeed", "alpha-deepspeed-zero3", "alpha-deepspeed-zero2"),
        ("accelerate", "alpha-accelerate-ddp", "alpha-accelerate-fsdp"),
    ],
)
def test_unstated_strategy_defaults_per_framework(library, framework, default, nearest):
    """For deepspeed and accelerate the default wins although similarity alone prefers another strategy."""
    intent = _intent(framework=framework)
    hits = search(intent.description(), cluster="alpha", k=len(SYNTHETIC))
    assert [c.template.id for c in hits if c.template.framework == framework][0] == nearest
    assert best_template(intent, "alpha").id == default


def test_candidates_are_the_clusters_templates_of_the_framework(library):
    ranked = retrieve(_intent(framework="deepspeed", strategy="zero2"), "ALPHA ", k=5)
    assert [c.template.id for c in ranked] == ["alpha-deepspeed-zero2", "alpha-deepspeed-zero3"]
    # Rows come back as the library's own metadata, path included.
    assert [c.template for c in ranked] == [get_template(c.template.id) for c in ranked]
    assert all(-1.0 <= c.score <= 1.0 for c in ranked)


def test_k_limits_the_candidates(library):
    assert len(retrieve(_intent(framework="pytorch"), "alpha", k=1)) == 1


def test_unsupported_template_is_returned_with_its_reason(library):
    top = retrieve(_intent(framework="deepspeed", strategy="zero3"), "beta")[0].template
    assert (top.id, top.supported, top.reason) == ("beta-deepspeed-zero3", False, UNSUPPORTED_REASON)


def test_unknown_framework_searches_every_framework_of_the_cluster(library):
    intent = _intent(strategy="zero3", missing=["framework"])
    assert best_template(intent, "alpha").id == "alpha-deepspeed-zero3"


def test_unknown_cluster_names_the_known_ones(library):
    for call in (lambda: retrieve(_intent(), "nowhere"), lambda: search("ddp", cluster="nowhere"),
                 lambda: list_templates(cluster="nowhere")):
        with pytest.raises(MapleError, match=r"unknown cluster 'nowhere'; known clusters: alpha, beta, gamma"):
            call()


def test_missing_combo_lists_what_the_cluster_has(library):
    with pytest.raises(MapleError, match=r"no accelerate template for beta; beta has: deepspeed-zero3, pytorch-ddp$"):
        retrieve(_intent(framework="accelerate"), "beta")
    with pytest.raises(MapleError, match=r"no launch templates for cluster 'gamma'"):
        retrieve(_intent(), "gamma")


def test_search_is_free_text_and_optionally_per_cluster(library):
    hits = search("ZeRO stage 3 partitions parameters", k=2)
    assert hits[0].template.strategy == "zero3" and len(hits) == 2
    assert hits[0].score >= hits[1].score
    assert {c.template.cluster for c in search("ZeRO stage 3", cluster="beta", k=5)} == {"beta"}
    with pytest.raises(MapleError):
        search("  ")


def test_list_filters_by_cluster_and_framework(library):
    assert [t.id for t in list_templates(cluster="beta")] == ["beta-pytorch-ddp", "beta-deepspeed-zero3"]  # profile order
    assert {t.cluster for t in list_templates(framework="accelerate")} == {"alpha"}
    assert len(list_templates()) == len(SYNTHETIC)
    with pytest.raises(MapleError, match="unknown framework 'theano'"):
        list_templates(framework="theano")


def test_table_is_built_once_then_opened(library, build_count, tmp_path, monkeypatch):
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path / "data"))
    retrieve(_intent(), "alpha")
    retrieve(_intent(framework="deepspeed"), "alpha")
    search("fsdp")
    assert len(build_count) == 1
    assert _template_tables() == [f"templates_{library_hash()}"]
    assert (tmp_path / "data" / "lancedb").is_dir()


def test_table_is_rebuilt_when_a_template_changes(synthetic_root, build_count, tmp_path, monkeypatch):
    root = shutil.copytree(synthetic_root, tmp_path / "templates")
    monkeypatch.setenv("MAPLE_TEMPLATES_DIR", str(root))
    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path / "data"))
    assert best_template(_intent(), "beta").description == "torchrun per node started by srun."

    path = root / "clusters" / "beta.yaml"
    path.write_text(path.read_text().replace("torchrun per node started by srun.", "srun starts every rank."))
    assert best_template(_intent(), "beta").description == "srun starts every rank."
    assert len(build_count) == 2
    assert _template_tables() == [f"templates_{library_hash()}"]  # the stale table is dropped
    with sqlite3.connect(tmp_path / "data" / "searches.sqlite") as answers:  # and its kept answers
        assert {row[0] for row in answers.execute("SELECT tbl FROM answers")} == {f"templates_{library_hash()}"}


def test_a_repeated_query_is_answered_without_lancedb_or_the_model(library, monkeypatch):
    first = retrieve(_intent(framework="deepspeed"), "alpha", k=5)

    def unavailable(*args):
        raise AssertionError("a kept answer must not need LanceDB or the embedding model")

    monkeypatch.setattr(vectordb, "connect", unavailable)
    monkeypatch.setattr(embedding, "embed", unavailable)
    assert retrieve(_intent(framework="deepspeed"), "alpha", k=5) == first
    with pytest.raises(AssertionError, match="kept answer"):  # a new query does need them
        retrieve(_intent(framework="deepspeed", nodes=7), "alpha")


# --- the real library (templates/launch) ---

@pytest.fixture(scope="module")
def real_data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("real-data")


@pytest.fixture
def real_library(real_data_dir, monkeypatch):
    monkeypatch.delenv("MAPLE_TEMPLATES_DIR", raising=False)
    monkeypatch.setenv("MAPLE_DATA_DIR", str(real_data_dir))
    assert data_dir() == real_data_dir
    return load_templates()


@pytest.mark.parametrize("strategy", ["fsdp", "zero3"])
def test_real_library_keeps_accelerates_strategy_on_every_cluster(real_library, strategy):
    """`accelerate launch --use_fsdp` (or --use_deepspeed --zero_stage 3) reads as framework
    accelerate, launcher accelerate; every cluster ports it with that strategy, not as plain DDP."""
    intent = _intent(framework="accelerate", strategy=strategy, launcher="accelerate")
    for cluster in load_profiles():
        top = best_template(intent, cluster)
        assert (top.framework, top.strategy) == ("accelerate", strategy), (cluster, top.id)


def test_real_library_retrieves_each_template_for_its_own_intent(real_library):
    """Every cluster x framework x strategy combo, and each launcher variant of one, comes first for
    an intent that states that framework, strategy and launcher."""
    same_intent = defaultdict(set)  # templates no intent field can tell apart
    for t in real_library:
        same_intent[(t.cluster, t.framework, t.strategy, t.launcher)].add(t.id)
    assert len({key[:3] for key in same_intent}) >= 72  # 12 clusters x 6 combos; an empty library must not pass
    for t in real_library:
        # The generic family (strategy "any") is what a strategy no other template has gets.
        strategy = "tp" if t.strategy == GENERIC else t.strategy
        top = best_template(_intent(framework=t.framework, strategy=strategy, launcher=t.launcher), t.cluster)
        assert top.id in same_intent[(t.cluster, t.framework, t.strategy, t.launcher)], (t.id, top.id)


def test_embeddings_are_cached_on_disk_so_a_known_text_never_loads_the_model(tmp_path, monkeypatch):
    from maple_ci import embedding

    monkeypatch.setenv("MAPLE_DATA_DIR", str(tmp_path))
    first = embedding.embed(["pytorch ddp launched with torchrun", "deepspeed zero3"])

    def no_model(texts):
        raise AssertionError(f"model asked for {texts}")

    monkeypatch.setattr(embedding, "_encode", no_model)
    again = embedding.embed(["deepspeed zero3", "pytorch ddp launched with torchrun", "deepspeed zero3"])
    assert np.array_equal(again, first[[1, 0, 1]])
    assert np.allclose(np.linalg.norm(again, axis=1), 1.0, atol=1e-5)
