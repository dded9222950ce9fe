"""What the machine's own commands answer on the emulated allocation: `scontrol show hostnames`,
`hostname [-i]`, `nvidia-smi -L`, `flux hostlist`, `flux getattr size`, `nproc`. Each answer is the
text to print, or None for a query the trace does not answer (recorded as not run). Stdlib only:
the trace's stand-in (standin.py) imports it inside the sandbox.

`here`: the node the command runs on, the job's nodes, the allocation's nodes, devices and cores per
node, the nodes' addresses, and the job's SLURM_JOB_NODELIST.
"""

from __future__ import annotations

from typing import Optional

from launch_options import Spec, last, parse_options  # bound in from maple_ci/launchers/options.py

# flux-hostlist(1) (read 2026-11-29): -n/--nth IDX, -c/--count, -e/--expand, -d/--delimiter, -l/--local
_HOSTLIST = Spec(aliases={"n": "nth", "c": "count", "e": "expand", "d": "delimiter", "l": "local"},
                 flags=frozenset({"count", "expand", "local", "sort", "union"}), value_default=True)


def answer(name: str, argv: list, here: dict) -> Optional[str]:
    handler = ANSWERS.get(name)
    return handler(argv, here) if handler else None


def scontrol(argv: list, here: dict) -> Optional[str]:
    if argv[:2] != ["show", "hostnames"]:
        return None
    listed = argv[2] if len(argv) > 2 else here["listed"]
    return "\n".join(listed.split(",")) if listed else "\n".join(here["alloc_nodes"])


def hostname(argv: list, here: dict) -> str:
    if any(a in ("-i", "-I", "--ip-address", "--all-ip-addresses") for a in argv):
        return here["addresses"].get(here["node"], "192.0.2.1")
    return here["node"]


def smi(argv: list, here: dict) -> Optional[str]:
    """The node's devices, one a line: `-L`, `--list-gpus`, `--query-gpu=F1,F2 --format=csv[,noheader]`
    (nvidia-smi(1), https://man.archlinux.org/man/extra/nvidia-utils/nvidia-smi.1.en, read 2026-11-29: csv
    prints a first line of column headers unless `noheader`; `count` is the number of GPUs, on every line)."""
    if "-L" in argv or "--list-gpus" in argv:
        return "\n".join(f"GPU {i}: stand-in (UUID: GPU-trace-{i})" for i in range(here["gpus"]))
    fields, form = _value(argv, "--query-gpu"), _value(argv, "--format")
    if fields is None:
        return None
    names = [f.strip() for f in fields.split(",") if f.strip()]
    values = {"index": lambda i: str(i), "count": lambda i: str(here["gpus"]), "name": lambda i: "stand-in GPU",
              "uuid": lambda i: f"GPU-trace-{i}"}
    lines = [", ".join(values.get(n, lambda i: "0")(i) for n in names) for i in range(here["gpus"])]
    header = [] if "noheader" in (form or "") or not form else [", ".join(names)]
    return "\n".join(header + lines)


def _value(argv: list, option: str) -> Optional[str]:
    """An option's value, as `--option=V` or `--option V`."""
    for i, word in enumerate(argv):
        if word.startswith(option + "="):
            return word.split("=", 1)[1]
        if word == option and i + 1 < len(argv):
            return argv[i + 1]
    return None


def flux(argv: list, here: dict) -> Optional[str]:
    names = here["nodes"]
    if argv[:1] == ["getattr"] and argv[1:2] == ["size"]:
        return str(len(names))
    if argv[:1] != ["hostlist"]:
        return None
    opts, _ = parse_options(argv[1:], _HOSTLIST)
    if last(opts, "nth") is not None:
        return names[int(last(opts, "nth"))]
    if "count" in opts:
        return str(len(names))
    if "expand" in opts:
        return (last(opts, "delimiter") or " ").join(names)
    # RFC 29's compressed form of the trace's own names (n001 ... n00N)
    return names[0] if len(names) == 1 else f"{names[0][0]}[{names[0][1:]}-{names[-1][1:]}]"


ANSWERS = {"scontrol": scontrol, "hostname": hostname, "nvidia-smi": smi, "rocm-smi": smi, "flux": flux,
           "nproc": lambda argv, here: str(here["cpus"])}
