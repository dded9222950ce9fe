"""MkDocs hooks (mkdocs.yml `hooks:`): the parts of the site written from the code at build time,
so they cannot go stale.

- `<!-- maple: NAME -->` in a page is replaced by what MARKERS[NAME] writes: the supported-machines
  table from the cluster profiles (`maple_ci.profiles.clusters_markdown()`, the table
  `maple clusters --markdown` prints), counts of clusters, templates and known errors, and the
  action's inputs from action.yml.
- center.md is workflows/gitlab/README.md, the center admin's guide, which lives beside the CI file
  it explains.
- A page under docs/ that the nav does not name is appended to it under "More", so a new page
  builds, and is reachable, before someone places it in the nav.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"<!-- maple: ([a-z ]+) -->")


def _maple():
    """The checkout's own maple_ci and bundled templates, whatever is installed or set."""
    if str(REPO) not in sys.path[:1]:
        sys.path.insert(0, str(REPO))
    os.environ.pop("MAPLE_TEMPLATES_DIR", None)
    from maple_ci import profiles
    from maple_ci.debug import kb
    return profiles, kb


def _clusters_table() -> str:
    return _maple()[0].clusters_markdown()


def _clusters_count() -> str:
    loaded = _maple()[0].load_profiles().values()
    return f"{len(loaded)} clusters and {sum(len(p.templates) for p in loaded)} launch templates"


def _known_errors_count() -> str:
    return str(len(_maple()[1].load_kb()))


def _action_inputs() -> str:
    inputs = yaml.safe_load((REPO / "action.yml").read_text())["inputs"]
    rows = ["| input | default | meaning |", "|---|---|---|"]
    for name, spec in inputs.items():
        default = f"`{spec['default']}`" if spec.get("default") else ""
        meaning = " ".join(spec["description"].split()).replace("|", "\\|")  # a pipe would end the cell
        rows.append(f"| `{name}` | {default} | {meaning} |")
    return "\n".join(rows) + "\n"


MARKERS = {"clusters table": _clusters_table, "clusters count": _clusters_count,
           "known errors count": _known_errors_count, "action inputs": _action_inputs}


def _nav_files(nav) -> set[str]:
    """Every page path a nav (strings, lists and one-key mappings, nested) names."""
    if isinstance(nav, str):
        return {nav}
    items = nav.values() if isinstance(nav, dict) else nav if isinstance(nav, list) else []
    return set().union(*(_nav_files(item) for item in items))


def on_config(config):
    docs = Path(config["docs_dir"])
    placed = _nav_files(config["nav"] or [])
    unplaced = sorted(str(path.relative_to(docs)) for path in docs.rglob("*.md") if str(path.relative_to(docs)) not in placed)
    if config["nav"] and unplaced:
        config["nav"].append({"More": unplaced})
    return config


def on_files(files, config):
    from mkdocs.structure.files import File
    files.append(File.generated(config, "center.md", abs_src_path=str(REPO / "workflows" / "gitlab" / "README.md")))
    return files


def on_page_markdown(markdown, page, config, files):
    def write(match):
        if match.group(1) not in MARKERS:
            raise ValueError(f"{page.file.src_uri}: unknown marker {match.group(0)} (known: {', '.join(MARKERS)})")
        return MARKERS[match.group(1)]()
    return MARKER.sub(write, markdown)
