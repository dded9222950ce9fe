"""Verification agent: static checks (static.py) and backends that really run a mini-app through a
generated script (slurm.py on a Slurm cluster, local.py emulating a scheduler, jacamar.py on a
center's GitLab runner). run_verification picks the backend for the CLI and the bot alike."""

import os
from pathlib import Path
from typing import Mapping, Optional

from ..errors import MapleError
from ..schedulers.slurm import SLURM


def miniapp_for(framework: str, strategy: str | None) -> str:
    """The mini-app that exercises what the job uses (miniapps/README.md)."""
    if framework == "deepspeed":
        return "deepspeed_zero3"
    if framework == "accelerate":
        return "accelerate_ddp"
    return "fsdp" if strategy == "fsdp" else "ddp"


def _slurm(path: Path, miniapp: str, env, limit: dict, **options):
    from .slurm import verify_slurm

    return verify_slurm(path, miniapp=miniapp, adapt=options["adapt"], env=env, **limit)


def _local(path: Path, miniapp: str, env, limit: dict, **options):
    from .local import verify_local

    return verify_local(path, miniapp=miniapp, in_allocation=options["in_allocation"], env=env, **limit)


def _jacamar(path: Path, miniapp: str, env, limit: dict, **options):
    from .jacamar import verify_jacamar

    if miniapp is None:
        raise MapleError("--program runs on the slurm and local backends; the jacamar backend runs mini-apps only")
    if not options["cluster"]:
        raise MapleError("the jacamar backend needs the cluster (the center runner's tag; --cluster)")
    env = os.environ if env is None else env
    return verify_jacamar(Path(path).as_posix(), cluster=options["cluster"], miniapp=miniapp, ref=options["ref"],
                          commit=options["commit"], gitlab_url=env.get("MAPLE_GITLAB_URL", ""),
                          project=env.get("MAPLE_GITLAB_PROJECT", ""),
                          trigger_token=env.get("MAPLE_GITLAB_TRIGGER_TOKEN", ""),
                          api_token=env.get("MAPLE_GITLAB_TOKEN") or None,
                          signing_key=env.get("MAPLE_SIGNING_KEY") or None, **limit)


# The backends by name: a center's runner, the scheduler's own (its unit's verify_backend), local emulation.
BACKENDS = {"jacamar": _jacamar, SLURM.verify_backend: _slurm, "local": _local}


def run_verification(backend: str, path: Path, *, miniapp: Optional[str], cluster: Optional[str] = None,
                     timeout: Optional[int] = None, adapt: bool = True, in_allocation: bool = False,
                     ref: str = "main", commit: Optional[str] = None, env: Optional[Mapping[str, str]] = None):
    """Run `miniapp` through the script at `path` with the named backend; a VerifyResult. Options a
    backend has no use for are ignored; timeout None keeps the backend's own default. env: the
    process environment by default; the jobs get only what jobenv.job_environment keeps of it, and
    the jacamar backend reads its MAPLE_GITLAB_* settings there. jacamar: `path` names the file in
    the repository at `commit` (a full commit id), which the center checks out and reads.
    miniapp None runs the script's own program (`maple verify --program`). The result carries
    the run's speed, judged against `cluster`'s profile (speed.py): a socket fallback fails it."""
    from .speed import with_speed

    run = BACKENDS.get(backend)
    if run is None:
        raise MapleError(f"unknown verification backend {backend!r}; choose {', '.join(BACKENDS)}")
    result = run(path, miniapp, env, {} if timeout is None else {"timeout": timeout}, adapt=adapt,
                 in_allocation=in_allocation, cluster=cluster, ref=ref, commit=commit)
    return with_speed(result, cluster, program=miniapp is None)
