"""Discovered facts as a cluster profile (templates/clusters/<name>.yaml's schema), written with a
comment on each fact: the query it came from and the date, or `unconfirmed` and the query that
would say. What no query can say (launch variants, the container's command) comes from
templates/discover/rows.yaml; the written text is checked against ClusterProfile before it is kept."""

from __future__ import annotations

import re
from functools import lru_cache

import yaml

from ..errors import MapleError
from ..paths import templates_dir
from . import Fact

NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,40}")
# The scheduler's own manual: the page a profile's docs_url falls back to without --docs-url.
MANUALS = {"slurm": "https://slurm.schedmd.com/documentation.html", "pbs": "https://openpbs.org/",
           "flux": "https://flux-framework.readthedocs.io/", "lsf": "https://www.ibm.com/docs/en/spectrum-lsf"}
ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


@lru_cache(maxsize=1)
def defaults() -> dict:
    return yaml.safe_load((templates_dir() / "discover" / "rows.yaml").read_text())


def comment(fact: Fact, date: str) -> str:
    return f"`{fact.command}` ({date})" if fact.confirmed else f"unconfirmed: `{fact.command}` would say"


def _rows(name: str, scheduler: str, gpus: int) -> list[dict]:
    launcher = defaults()["rank_launcher"].get(scheduler)
    if launcher is None:
        return []
    return [{**row, "id": f"{name}-{row['id']}", "launcher": launcher if row["launcher"] == "RANK_LAUNCHER" else row["launcher"],
             "description": row["description"].format(name=name, gpus=gpus)} for row in defaults()["rows"]]


def _container(runtime: str, vendor: str) -> dict:
    known = defaults()["containers"].get(runtime)
    if runtime == "none":
        return {"runtime": "none"}
    if known is None:  # a runtime found whose command form maple does not write: none is used
        return {"runtime": "none", "unconfirmed": [f"{runtime} is on PATH; its command form is not written here"]}
    return {"runtime": runtime, "command": known["command"], "gpu_flags": known["gpu_flags"].get(vendor, []),
            "unconfirmed": ["the command and GPU flags are the runtime's defaults, not read from the site"]}


# Facts found but not used by a port, listed in the profile's notes: (fact, label).
NOTED = (("mpi_plugins", "srun --mpi plugins"), ("mpi_default", "default MPI plugin (MpiDefault)"),
         ("cpu_binding", "default CPU binding (TaskPluginParam)"), ("qos", "QOS limits"),
         ("accounts", "your accounts"), ("resources", "node resources"))


def _notes(facts: dict[str, Fact], date: str) -> list[str]:
    """What was found but not used, each with the query it came from and the date."""
    software = facts["software"]
    notes = [f"{kind} modules: {', '.join(names[:8])}; from {comment(software, date)}"
             for kind, names in sorted(software.value.items())]
    for key, label in NOTED:
        fact = facts.get(key)
        if fact and fact.confirmed and fact.value:
            value = ", ".join(fact.value) if isinstance(fact.value, list) else fact.value
            notes.append(f"{label}: {value}; from {comment(fact, date)}")
    return notes


def _identity_rows(f: dict[str, Fact], name: str, date: str, docs_url: str) -> list[tuple]:
    docs_why = "" if docs_url else "unconfirmed: the scheduler's manual; give the site's page with --docs-url"
    return [("name", name, ""), ("display_name", name, ""),
            ("center", "unconfirmed", "unconfirmed: no query names the center; edit it"),
            ("docs_url", docs_url or MANUALS[f["scheduler"].value], docs_why),
            ("scheduler", f["scheduler"].value, comment(f["scheduler"], date))]


def _hardware_rows(f: dict[str, Fact], date: str) -> list[tuple]:
    vendor = f["gpu_vendor"].value
    rows = [("cpu_arch", ARCH.get(f["cpu_arch"].value, f["cpu_arch"].value), comment(f["cpu_arch"], date))]
    rows += [(key, f[key].value, comment(f[key], date)) for key in ("gpu_vendor", "gpu_model", "gpus_per_node")]
    rows.append(("devices_per_node", f["gpus_per_node"].value, "one device per GPU the scheduler counts"))
    rows += [(key, f[key].value, comment(f[key], date))
             for key in ("gpu_memory_gb", "cores_per_node", "scheduler_cpus_per_node") if key in f]
    return rows + [("device", "xpu" if vendor == "intel" else "cuda", "follows from gpu_vendor"),
                   ("backend", "xccl" if vendor == "intel" else "nccl", "follows from gpu_vendor")]


def _scheduler_rows(f: dict[str, Fact], date: str) -> list[tuple]:
    rows = [(key, f[key].value, comment(f[key], date)) for key in ("queue_directive", "queues", "account_required")]
    accounts = f.get("accounts")  # Slurm's associations; other schedulers list no accounts
    if accounts is None:
        rows.append(("account_example", "your-account", "a placeholder: this scheduler lists no accounts"))
    else:
        rows.append(("account_example", (accounts.value or ["your-account"])[0], comment(accounts, date)))
    if f.get("gpu_request"):
        rows.append(("gpu_request", f["gpu_request"].value, comment(f["gpu_request"], date)))
    return rows


def _software_rows(f: dict[str, Fact], name: str, date: str, docs_url: str) -> list[tuple]:
    scheduler, pytorch = f["scheduler"].value, f["pytorch_module"].value
    setup = {"modules": [pytorch]} if pytorch else {"user_env": "venv", "user_env_docs": docs_url or MANUALS[scheduler]}
    rows = [("default_launcher", "torchrun", "a choice: one torchrun per node runs on every scheduler's base"),
            ("frameworks", {"pytorch": setup}, comment(f["pytorch_module"], date))]
    if f["nccl_socket_ifname"].value:
        rows.append(("env", {"NCCL_SOCKET_IFNAME": f["nccl_socket_ifname"].value}, comment(f["nccl_socket_ifname"], date)))
    return rows + [("device_order", f["device_order"].value, comment(f["device_order"], date)),
                   ("container", _container(f["container_runtime"].value, f["gpu_vendor"].value),
                    comment(f["container_runtime"], date)),
                   ("notes", _notes(f, date), ""),
                   ("templates", _rows(name, scheduler, f["gpus_per_node"].value), "launch variants: templates/discover/rows.yaml")]


def build(facts: dict[str, Fact], name: str, date: str, docs_url: str = "") -> list[tuple[str, object, str]]:
    """The profile as (field, value, comment) in file order; the comment names the fact's query and
    date, or why the value is what it is where no query gives it."""
    if not NAME.fullmatch(name):
        raise MapleError(f"--name {name!r}: use lowercase letters, digits and '-' (it becomes the file's name)")
    return (_identity_rows(facts, name, date, docs_url) + _hardware_rows(facts, date)
            + _scheduler_rows(facts, date) + _software_rows(facts, name, date, docs_url))


def render(facts: dict[str, Fact], name: str, date: str, host: str, docs_url: str = "") -> str:
    """The profile's YAML text, checked against ClusterProfile."""
    from ..profiles import ClusterProfile

    lines = [f"# Written by `maple cluster discover` on {host}, {date}: each fact names the query it came from.",
             "# Values marked unconfirmed no query here could say; check them and edit."]
    for field, value, why in build(facts, name, date, docs_url):
        text = yaml.safe_dump({field: value}, sort_keys=False, default_flow_style=False, width=110).rstrip("\n")
        first, _, rest = text.partition("\n")
        lines.append(f"{first}  # {why}" if why else first)
        if rest:
            lines.append(rest)
    text = "\n".join(lines) + "\n"
    try:
        ClusterProfile.model_validate(yaml.safe_load(text))
    except Exception as exc:  # a fact the schema refuses: say which, write nothing
        raise MapleError(f"the discovered profile is not valid: {exc}") from exc
    return text
