"""Verification agent: static checks (static.py) and backends that really run a mini-app through a
generated script (slurm.py on a Slurm cluster, local.py emulating a scheduler, jacamar.py on a
center's GitLab runner)."""


def miniapp_for(framework: str, strategy: str | None) -> str:
    """The mini-app that exercises what the job uses (miniapps/README.md)."""
    if framework == "deepspeed":
        return "deepspeed_zero3"
    if framework == "accelerate":
        return "accelerate_ddp"
    return "fsdp" if strategy == "fsdp" else "ddp"
