"""`maple port`: extract once, then retrieve -> synthesize -> static checks for each target.

Everything is computed in memory first; files are written only when every target was understood,
so a bad input or an unknown cluster changes nothing on disk.
"""

from dataclasses import replace
from pathlib import Path
from typing import Callable, Optional

from pydantic import BaseModel, Field

from .errors import MapleError
from .extract import extract, load_source
from .intent import JobIntent
from .profiles import get_profile
from .retrieve import best_template
from .synthesize import output_path, render, require_port_facts
from .verify.static import Check, checks_ok, static_checks


class PortResult(BaseModel):
    cluster: str
    status: str  # "ok" | "failed" (a static check failed) | "unsupported" (no script can run there)
    template: Optional[str] = None
    path: Optional[str] = None
    reason: str = ""
    checks: list[Check] = Field(default_factory=list)
    script: str = Field(default="", exclude=True)  # the generated text; the bot commits it


def apply_overrides(intent: JobIntent, **overrides) -> JobIntent:
    """Values the user gave as options win over what was extracted."""
    given = {key: value for key, value in overrides.items() if value is not None}
    if not given:
        return intent
    if "nodes" in given or "gpus_per_node" in given:
        given["world_size"] = None  # recomputed from nodes * gpus_per_node
    intent = replace(intent, **given)  # checks the given values as JobIntent does
    return replace(intent, missing=[name for name in intent.missing if getattr(intent, name) is None]).with_defaults()


def port_intent(intent: JobIntent, targets: list[str], source_name: str, out_dir: Path,
                progress: Callable[[str], None] = lambda message: None) -> list[PortResult]:
    profiles = [get_profile(name) for name in targets]  # unknown clusters fail before any work
    if not profiles:
        raise MapleError("no target cluster given; name at least one with --to")
    require_port_facts(intent, source_name)  # before any target: a refusal changes nothing
    results = []
    for profile in profiles:
        progress(f"{profile.name}: retrieving a template")
        template = best_template(intent, profile.name)
        if not template.supported:
            results.append(PortResult(cluster=profile.name, status="unsupported", template=template.id, reason=template.reason))
            continue
        progress(f"{profile.name}: rendering {template.id} and checking it")
        script = render(intent, profile, template, source_name, out_dir)
        checks = static_checks(script, intent, profile)
        results.append(PortResult(
            cluster=profile.name,
            status="ok" if checks_ok(checks) else "failed",
            template=template.id,
            path=str(output_path(out_dir, profile, source_name)),
            checks=checks,
            script=script,
        ))
    return results


def write_results(results: list[PortResult]) -> None:
    for result in results:
        if result.path:
            path = Path(result.path)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(result.script)
            path.chmod(0o755)


def port(source: str, targets: list[str], out_dir: Path, *, progress: Callable[[str], None] = lambda message: None,
         **overrides) -> tuple[JobIntent, list[PortResult]]:
    name, text = load_source(source)
    progress(f"extracting the job intent from {name}")
    intent = apply_overrides(extract(text, name), **overrides)
    results = port_intent(intent, targets, name, out_dir, progress)
    write_results(results)
    return intent, results
