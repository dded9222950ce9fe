"""What the new machines' tests share (test_machines_europe, test_machines_worldwide): the six forms
of a job as overrides of the shipped example, and a port of one intent to one cluster."""

from pathlib import Path

import pytest

from maple_ci.bench_real import load_real_cases, real_dir
from maple_ci.extract import extract
from maple_ci.files import read_text
from maple_ci.port import apply_overrides, port_intent

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "perlmutter_torchrun_ddp.sbatch"
# The six forms, as JobIntent overrides of the shipped example, and the template each must choose.
FORMS = {
    "ddp": ({"framework": "pytorch", "strategy": "ddp"}, "-pytorch-ddp-torchrun"),
    "fsdp": ({"framework": "pytorch", "strategy": "fsdp"}, "-pytorch-fsdp"),
    "deepspeed": ({"framework": "deepspeed", "strategy": "zero3"}, "-deepspeed-zero3"),
    "accelerate": ({"framework": "accelerate", "strategy": "ddp"}, "-accelerate-ddp"),
    "single": ({"strategy": "single", "launcher": "python", "nodes": 1, "gpus_per_node": 1, "world_size": 1},
               "-single"),
    "generic": ({"framework": "megatron", "strategy": "3d", "launcher": "srun", "entrypoint": "pretrain_gpt.py",
                 "script_args": ["--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2"]},
                "-generic"),
}


def port_to(intent, cluster: str, out: Path, **overrides):
    [result] = port_intent(apply_overrides(intent, **overrides), [cluster], "job.sh", out,
                           python_envs={"default": "/opt/venvs/train"})
    return result


@pytest.fixture(scope="module")
def example(module_data_dir):
    return extract(EXAMPLE.read_text(), EXAMPLE.name, EXAMPLE.parent)


CASES = load_real_cases()


def corpus_case(source: str) -> dict:
    """The real-corpus case of `source` (a path under tests/data/real)."""
    [case] = [c for c in CASES if c["path"] == real_dir() / source]
    return case


def read_case(case: dict):
    """The JobIntent of a corpus case, read inside its group's checkout as the corpus tests read it."""
    name = str(case["path"].relative_to(case["group"].parent))
    return extract(read_text(case["path"], name), name, case["path"].parent, case["group"])
