"""`maple bench --suite catalog`: the debug agent on the components' own messages (issue 27, B).

The catalogue is the knowledge-base entries that say which component's message they are and where
it was read (kb.KBEntry.component, read_from). Each of their examples is one message; the bench
puts it in a realistic log of that component (what a job prints before it, and after), gives the
log and a launch script of the component's scheduler to the agent as `maple debug` would, and
scores per component: the message located, classified (its own entry first, or one of its class
in benchmarks/debug/classes.yaml), answered actionably (an edit from its class, or advice of the
entry's kind), and a wrong edit offered first.
"""

import re
from collections import defaultdict
from typing import Callable, NamedTuple, Optional

from .bench_debug import load_classes
from .debug import KBEntry, load_kb

# A launch script per scheduler: the message's fixes read it as they read a user's.
_SCRIPTS = {
    "slurm": "#!/bin/bash\n#SBATCH --job-name=train\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n"
             "#SBATCH --gpus-per-node=4\n#SBATCH --time=04:00:00\nmodule load pytorch\n"
             "export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)\n"
             "srun python train.py --epochs 10\n",
    "pbs": "#!/bin/bash\n#PBS -N train\n#PBS -l select=2:ncpus=64:ngpus=4\n#PBS -l walltime=04:00:00\n"
           "#PBS -q workq\ncd $PBS_O_WORKDIR\nmodule load pytorch\nmpiexec -n 8 --ppn 4 python train.py\n",
    "lsf": "#!/bin/bash\n#BSUB -J train\n#BSUB -n 8\n#BSUB -W 04:00\n#BSUB -q normal\n"
           "module load pytorch\nmpirun -np 8 python train.py\n",
}
# What a job prints around a component's message: (lines before, lines after). Before-lines are
# ordinary output (no error); after-lines are what the launcher adds once the job dies.
_START = ["+ module load pytorch", "Job 4211873 started on gpu-a017 at Sun Nov 29 08:00:01 UTC 2026"]
_STEP_END = ["srun: error: gpu-a017: task 0: Exited with exit code 1",
             "srun: Terminating StepId=4211873.0"]
_CONTEXT: dict[str, tuple[list[str], list[str]]] = {
    "slurm": (["$ sbatch train.sbatch"], []),
    "slurm-step": (_START, ["srun: Job step aborted: Waiting up to 32 seconds for job step to finish."]),
    "slurm-pending": (["$ squeue --me", "  JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"], []),
    "pbs": (["$ qsub train.pbs"], []),
    "lsf": (["$ bsub < train.lsf"], []),
    "flux": (["$ flux batch -N2 train.sh"], []),
    "nccl": (_START + ["gpu-a017:4121:4121 [0] NCCL INFO Bootstrap : Using ib0:10.20.1.17<0>",
                       "gpu-a017:4121:4121 [0] NCCL INFO cudaDriverVersion 12040",
                       "NCCL version 2.21.5+cuda12.4",
                       "gpu-a017:4121:4187 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.20.1.17<0>"],
             ["gpu-a017:4121:4187 [0] NCCL INFO transport/net.cc:1302 -> 6"] + _STEP_END),
    "torch": (_START + ["W1129 08:00:03.114000 4121 torch/distributed/run.py:793] Setting OMP_NUM_THREADS "
                        "environment variable for each process to be 1 in default"], _STEP_END),
    "gpu-runtime": (_START + ["epoch 0 step 100 loss 2.3141", "epoch 0 step 200 loss 2.2087"], _STEP_END),
    "lmod": (["+ module purge"], ["/var/spool/slurmd/job4211873/slurm_script: line 9: python: command not found"]),
    "apptainer": (_START + ["+ srun apptainer exec --nv pytorch.sif python train.py"], _STEP_END),
}
_SCHEDULER = {"pbs": "pbs", "lsf": "lsf"}  # components whose messages come from jobs of that scheduler


class Message(NamedTuple):
    entry: KBEntry
    text: str


def catalog_messages() -> list[Message]:
    """Every example of every catalogue entry, in knowledge-base order."""
    return [Message(e, x) for e in load_kb() if e.component for x in e.examples]


def catalog_log(message: Message) -> str:
    before, after = _CONTEXT.get(message.entry.component, _CONTEXT["gpu-runtime"])
    return "\n".join([*before, message.text, *after]) + "\n"


def catalog_script(message: Message) -> str:
    return _SCRIPTS[_SCHEDULER.get(message.entry.component, "slurm")]


def _class_of(entry_id: str, classes: dict) -> set[str]:
    """The entries that answer the same class as entry_id (itself at least)."""
    return {entry_id}.union(*(set(row.get("entries", [])) for row in classes.values() if entry_id in row.get("entries", [])))


def _located(message: Message, failure) -> bool:
    first = message.text.split("\n")[0].strip()
    lines = [x.strip() for x in (failure.line, failure.exception) if x and x.strip()] if failure else []
    return any(first in x or x in first for x in lines)


def score_message(message: Message, diagnosis, classes: dict) -> dict:
    entry, same = message.entry, _class_of(message.entry.id, classes)
    top = diagnosis.matches[0].entry.id if diagnosis.matches and diagnosis.matches[0].kind == "exact" else None
    first = diagnosis.candidates[0] if diagnosis.candidates else None
    by_edit = first is not None and first.entry_id in same
    # Advice of the entry's kind, or (an edit whose very option is the site's) the values to look up.
    by_advice = diagnosis.advice.kind == (entry.advice_kind or "") or diagnosis.advice.kind == "site_value" and top in same
    return {"component": entry.component, "entry": entry.id, "message": message.text.split("\n")[0][:120],
            "located": _located(message, diagnosis.failure), "classified": top in same,
            "actionable": by_edit or (first is None and by_advice), "wrong_edit": first is not None and not by_edit,
            "got_entry": top, "got_advice": diagnosis.advice.kind}  # fmt: skip


def _shares(rows: list[dict]) -> dict:
    n = len(rows)
    return {"messages": n, **{k: sum(1 for r in rows if r[k]) for k in ("located", "classified", "actionable", "wrong_edit")}}


def run_catalog(messages: list[Message], step: Optional[Callable[[int, int], None]] = None) -> dict:
    """The agent on every catalogue message (offline, no model), scored per component."""
    from .debug import diagnose

    classes = load_classes()
    rows = []
    for done, message in enumerate(messages, 1):
        rows.append(score_message(message, diagnose(catalog_script(message), catalog_log(message), None), classes))
        if step:
            step(done, len(messages))
    per = defaultdict(list)
    for row in rows:
        per[row["component"]].append(row)
    missed = [r for r in rows if not (r["located"] and r["classified"] and r["actionable"]) or r["wrong_edit"]]
    return {"all": _shares(rows), "components": {c: _shares(r) for c, r in sorted(per.items())},
            "rows": rows, "failures": missed}  # fmt: skip


def print_catalog(report: dict, out) -> None:
    from rich.table import Table

    table = Table("component", "messages", "located", "classified", "actionable", "wrong edit",
                  title="catalogue messages, each in a realistic log")  # fmt: skip
    for name, s in [*report["components"].items(), ("all", report["all"])]:
        n = s["messages"]
        table.add_row(name, str(n), *(f"{s[k]}/{n} ({s[k] / n:.0%})" for k in ("located", "classified", "actionable", "wrong_edit")))
    out.print(table)
    for row in report["failures"]:
        what = [k for k in ("located", "classified", "actionable") if not row[k]] + (["wrong edit"] if row["wrong_edit"] else [])
        out.print(f"[red]{row['entry']}[/] ({', '.join(what)}; got {row['got_entry']}, {row['got_advice']}): "
                  f"{row['message']}", highlight=False)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# The coverage table of docs/debug-coverage.md (tests/test_debug_coverage.py keeps the page equal to it)


def _origin(read_from: str) -> str:
    """Where a component's messages were read: owner/repo @ release, or the document's name."""
    repo = re.match(r"([\w.-]+/[\w.-]+)\s", read_from)
    release = re.search(r"@ ([\w.-]+)", read_from)
    if repo:
        return repo[1] + (f" @ {release[1]}" if release else "")
    return re.split(r"[,(]", read_from, maxsplit=1)[0].strip()


def coverage_table() -> str:
    """Per component of the catalogue: its entries, messages, entries with an edit, the advice
    kinds it answers with, and where its messages were read; as a Markdown table."""
    per = defaultdict(list)
    for entry in load_kb():
        if entry.component:
            per[entry.component].append(entry)
    rows = ["| component | entries | messages | with an edit | advice when no edit | read from |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    for name, entries in sorted(per.items()):
        kinds = sorted({e.advice_kind or "fix or site value" for e in entries})
        origins = sorted({_origin(e.read_from) for e in entries})
        rows.append(f"| {name} | {len(entries)} | {sum(len(e.examples) for e in entries)} | "
                    f"{sum(1 for e in entries if e.alternatives)} | {', '.join(kinds)} | {'; '.join(origins)} |")  # fmt: skip
    return "\n".join(rows) + "\n"
