"""The launch-template library: each cluster profile's `templates:` rows (templates/clusters/<name>.yaml),
rendered from the cluster's one template file or its scheduler's base under templates/launch/.

A row names a variant (framework, strategy, launcher, description); the cluster and scheduler come
from its profile and the file it renders from is the profile's `launch_template` (default
"_<scheduler>.sh.j2"). Which launch block a row renders is its `shape`, derived from the row
(templates/launch/_shapes.sh.j2 holds the shapes). Files whose name starts with "_" are shared parts.
"""

import hashlib
from pathlib import Path
from typing import Literal, Optional, Union

from pydantic import BaseModel, ConfigDict

from .errors import MapleError
from .intent import Framework, Strategy
from .paths import templates_dir
from .profile_files import cluster_data, profile_paths

# "any": the generic family, which runs any torch.distributed program (Megatron-LM, Lightning,
# tensor or pipeline parallel code) one rank per device or one torchrun per node.
GENERIC = "any"
# Launchers that run one process per node and start the ranks themselves: each has its own shape.
PER_NODE_SHAPES = frozenset({"torchrun", "accelerate", "deepspeed"})


class TemplateRow(BaseModel):
    """One template variant as a profile lists it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    framework: Framework
    strategy: Union[Strategy, Literal["any"]]
    launcher: str
    description: str
    supported: bool = True
    reason: str = ""  # why it cannot run (supported: false) or a caveat worth showing


class TemplateMeta(TemplateRow):
    """A row with what its profile adds: the cluster, its scheduler and the file to render."""

    cluster: str
    scheduler: str
    path: str  # relative to templates/launch

    @property
    def shape(self) -> str:
        """The launch block this variant renders (launch_<shape> in templates/launch/_shapes.sh.j2)."""
        if self.strategy == "single":
            return "single"
        if self.launcher in PER_NODE_SHAPES:
            return self.launcher
        return "generic" if self.strategy == GENERIC else "ranks"

    def embedding_text(self) -> str:
        return f"{self.framework} {self.strategy} launched with {self.launcher} on {self.cluster}. {self.description}"


def launch_dir() -> Path:
    return templates_dir() / "launch"


def cluster_templates(data: dict) -> list[TemplateMeta]:
    """The template variants of one profile's data."""
    path = data.get("launch_template") or f"_{data['scheduler']}.sh.j2"
    try:
        return [TemplateMeta.model_validate({**row, "cluster": data["name"], "scheduler": data["scheduler"], "path": path})
                for row in data.get("templates") or []]
    except Exception as exc:  # a broken row must name its profile
        raise MapleError(f"cluster profile {data['name']}: invalid template row: {exc}") from exc


def load_templates() -> list[TemplateMeta]:
    templates = [t for data in cluster_data().values() for t in cluster_templates(data)]
    seen: dict[str, str] = {}
    for t in templates:
        if t.id in seen:
            raise MapleError(f"duplicate template id {t.id!r} in the profiles of {seen[t.id]} and {t.cluster}")
        seen[t.id] = t.cluster
    return templates


def get_template(template_id: str, templates: Optional[list[TemplateMeta]] = None) -> TemplateMeta:
    for t in templates or load_templates():
        if t.id == template_id:
            return t
    raise MapleError(f"unknown template {template_id!r}; `maple templates list` shows them")


def library_hash() -> str:
    """Content hash of every template and cluster profile: the retrieval cache key."""
    digest = hashlib.sha256()
    root = templates_dir()
    for path in sorted(list((root / "launch").rglob("*.j2")) + profile_paths(str(root))):
        digest.update(str(path.relative_to(root) if path.is_relative_to(root) else path).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
