"""The launch-template library: templates/launch/<cluster>/<name>.sh.j2, each with YAML front matter.

A template file starts with its metadata in a Jinja comment, so Jinja ignores it when rendering:

    {#---
    id: perlmutter-pytorch-ddp
    cluster: perlmutter
    ...
    ---#}

Files whose name starts with "_" are shared parts (bases, macros), not templates.
"""

import hashlib
import re
from pathlib import Path
from typing import Literal, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict

from .errors import MapleError
from .intent import Framework, Strategy
from .paths import templates_dir

# "any": the generic family, which runs any torch.distributed program (Megatron-LM, Lightning,
# tensor or pipeline parallel code) one rank per device or one torchrun per node.
GENERIC = "any"

_FRONT_MATTER = re.compile(r"\A\{#---\n(.*?)\n---#\}\n?", re.DOTALL)


class TemplateMeta(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    cluster: str
    scheduler: str
    framework: Framework
    strategy: Union[Strategy, Literal["any"]]
    launcher: str
    description: str
    supported: bool = True
    reason: str = ""  # why it cannot run (supported: false) or a caveat worth showing
    path: str = ""  # relative to templates/launch, filled in by the loader

    def embedding_text(self) -> str:
        return f"{self.framework} {self.strategy} launched with {self.launcher} on {self.cluster}. {self.description}"


def launch_dir() -> Path:
    return templates_dir() / "launch"


def parse_template(path: Path) -> TemplateMeta:
    match = _FRONT_MATTER.match(path.read_text())
    if not match:
        raise MapleError(f"template {path} has no '{{#---' front matter")
    try:
        meta = TemplateMeta.model_validate(yaml.load(match.group(1), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except Exception as exc:
        raise MapleError(f"template {path}: invalid front matter: {exc}") from exc
    return meta.model_copy(update={"path": str(path.relative_to(launch_dir()))})


def load_templates() -> list[TemplateMeta]:
    templates = [parse_template(p) for p in sorted(launch_dir().rglob("*.j2")) if not p.name.startswith("_")]
    seen: dict[str, str] = {}
    for t in templates:
        if t.id in seen:
            raise MapleError(f"duplicate template id {t.id!r} in {seen[t.id]} and {t.path}")
        seen[t.id] = t.path
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
    for path in sorted(list((root / "launch").rglob("*.j2")) + list((root / "clusters").glob("*.yaml"))):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
