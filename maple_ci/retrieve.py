"""Retrieval agent: rank the launch templates that could port a job to a target cluster.

The library is embedded once into the LanceDB table "templates" (cached under data_dir(), rebuilt
when library_hash() changes). A query is one embedding of the intent's description and one
filtered vector search, whose answer is kept on disk (vectordb.search); the ranking rule in
retrieve() then puts the wanted strategy and the intent's launcher (or its kind) first. Neither
LanceDB nor the embedding model is imported here: `maple templates list` needs neither.
"""

from dataclasses import replace
from typing import Optional, get_args

from pydantic import BaseModel

from . import vectordb
from .errors import MapleError
from .intent import Framework, JobIntent
from .library import GENERIC, TemplateMeta, launch_dir, library_hash, load_templates
from .process_model import PER_NODE_LAUNCHERS, model_given
from .profiles import get_profile

TABLE = "templates"

# The strategy a framework's users mean when their script does not say: plain data parallelism for
# PyTorch and Accelerate, ZeRO-3 for DeepSpeed. Frameworks not listed have no default.
DEFAULT_STRATEGY = {"pytorch": "ddp", "deepspeed": "zero3", "accelerate": "ddp"}
# Frameworks whose own launcher and config a port keeps (their templates pass the DeepSpeed config,
# Accelerate's mode): the generic family is no candidate for them.
OWN_LAUNCH = frozenset({"deepspeed", "accelerate"})

_COLUMNS = list(TemplateMeta.model_fields)


class Candidate(BaseModel):
    template: TemplateMeta
    score: float  # cosine similarity of the query and the template's embedding text


def _template_rows() -> list[dict]:
    templates = load_templates()
    if not templates:
        raise MapleError(f"no launch templates under {launch_dir()}")
    return [{**t.model_dump(), "text": t.embedding_text()} for t in templates]


def templates_table():
    """The library's LanceDB table: built on first use and whenever a template changes, else opened."""
    return vectordb.cached_table(TABLE, library_hash(), _template_rows)


def _sql_string(value: str) -> str:
    # Cluster names come from data files; quote them like any other interpolated value.
    return "'" + value.replace("'", "''") + "'"


def _search(text: str, where: Optional[str], limit: Optional[int]) -> list[Candidate]:
    """One embedding and one vector search; limit None means every row that passes `where`."""
    rows = vectordb.search(TABLE, library_hash(), _template_rows, text, _COLUMNS, where, limit)
    return [
        Candidate(template=TemplateMeta(**{c: row[c] for c in _COLUMNS}), score=1.0 - row["_distance"])
        for row in rows
    ]


def _missing_combo(cluster: str, framework: str) -> MapleError:
    combos = sorted({"generic" if t.strategy == GENERIC else f"{t.framework}-{t.strategy}"
                     for t in load_templates() if t.cluster == cluster})
    if not combos:
        return MapleError(f"no launch templates for cluster {cluster!r} yet")
    generic = "" if framework in OWN_LAUNCH else " and no generic one"
    return MapleError(f"no {framework} template{generic} for {cluster}; {cluster} has: {', '.join(combos)}")


def retrieve(intent: JobIntent, cluster: str, k: int = 3) -> list[Candidate]:
    """Up to k templates for running `intent` on `cluster`, best first.

    Candidates are the cluster's templates of the intent's framework (any framework when the
    intent lists "framework" as missing), plus, for every framework but those with launchers of
    their own (OWN_LAUNCH), the cluster's generic family (strategy "any"), which runs any
    torch.distributed program: Megatron-LM, Lightning, tensor or pipeline parallel PyTorch.
    Ranking rule, key by key:
      1. the wanted strategy first: intent.strategy, or when the intent does not state one,
         DEFAULT_STRATEGY for its framework (pytorch: ddp, deepspeed: zero3, accelerate: ddp;
         other frameworks have none; an unknown framework reads as JobIntent's default, pytorch);
         then the generic family, each in the source's process model (per device or per node)
         before either in the other, then the framework's templates of other strategies;
      2. then the intent's own launcher, since the script was written for it: it picks between a
         cluster's variants of one strategy (srun per GPU vs one torchrun per node); Lightning
         counts as launched per device, as its cluster environments expect;
      3. then a launcher of the same kind (per device, like srun, mpiexec; or per node, like
         torchrun, deepspeed): a Frontier srun script ports to Polaris' mpiexec form, not torchrun;
      4. then higher similarity of intent.description() and the template text.
    Unsupported templates stay in the list, so the caller can report their `reason`.
    """
    profile = get_profile(cluster)
    where = f"cluster = {_sql_string(profile.name)}"
    # A framework without templates of its own (JAX, Horovod...) is launched by PyTorch's: a launch
    # line starts any program, and python_env.py gives it its set-up (or stops the job, saying why).
    family = intent.template_framework()
    if "framework" not in intent.missing:
        generic = "" if family in OWN_LAUNCH else f" OR strategy = {_sql_string(GENERIC)}"
        where += f" AND (framework = {_sql_string(family)}{generic})"
    candidates = _search(replace(intent, framework=family).description(), where, limit=None)
    if not candidates:
        raise _missing_combo(profile.name, family)
    wanted = intent.template_strategy() or DEFAULT_STRATEGY.get(family)
    # Lightning's cluster environments expect the scheduler to start every rank (under Slurm, one
    # srun task per GPU, checked against Trainer(devices)); a torchrun inside srun confuses them.
    lightning = intent.framework == "lightning"
    own_launcher = None if lightning else intent.launcher
    # Every launcher but the per-node ones starts the ranks itself (aprun, jsrun as much as srun).
    per_device = lightning or intent.launcher not in PER_NODE_LAUNCHERS
    free = not model_given(intent)  # a request in words: any process model the target's templates use

    def rank(c: Candidate):
        strategy, launcher = c.template.strategy, c.template.launcher
        other_kind = (launcher not in PER_NODE_LAUNCHERS) != per_device and not free
        # The process model outranks the wanted strategy's own template: the generic family runs any
        # torch.distributed program, so a torchrun-per-node DDP job takes Anvil's generic torchrun
        # form rather than its srun-per-GPU DDP template (issue 16: one launcher per node stays one).
        fit = 0 if strategy == wanted else 1 if strategy == GENERIC else 4
        return (fit + (2 if other_kind and fit < 4 else 0), launcher != own_launcher, other_kind, -c.score)

    return sorted(candidates, key=rank)[:k]


def best_template(intent: JobIntent, cluster: str) -> TemplateMeta:
    return retrieve(intent, cluster, k=1)[0].template


def search(query: str, cluster: Optional[str] = None, k: int = 5) -> list[Candidate]:
    """Free-text search over the library (`maple templates search`), by similarity alone."""
    if not query.strip():
        raise MapleError("search needs some words to look for")
    where = f"cluster = {_sql_string(get_profile(cluster).name)}" if cluster else None
    return _search(query, where, limit=k)


def list_templates(cluster: Optional[str] = None, framework: Optional[str] = None) -> list[TemplateMeta]:
    """The library in path order (cluster, then file name), optionally narrowed; loads no model."""
    if framework is not None and framework not in get_args(Framework):
        raise MapleError(f"unknown framework {framework!r}; known: {', '.join(get_args(Framework))}")
    name = get_profile(cluster).name if cluster else None
    return [t for t in load_templates() if name in (None, t.cluster) and framework in (None, t.framework)]
