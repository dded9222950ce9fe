"""Where the command starts in a command that runs one: a wrapper (numactl, taskset, nsys, ncu, timeout), a
container (apptainer/singularity exec|run IMAGE), a runner (`uv run`, `conda run -n ENV`, `shifter
--image=X`, `podman-hpc run IMAGE`, `enroot start IMAGE`, `stdbuf -oL`, `nohup`), and whether a file
is a shell script bash reads. Stdlib only: the trace's stand-in (standin.py) imports it inside the
sandbox, and runs what it finds there.
"""

from __future__ import annotations

import os
from typing import Optional

# nsys profile's switches each take a value (`--force-overwrite true`, `-s none`): Nsight Systems
# User Guide, CLI profile command switch options (read 2026-11-29)
WRAPPER_VALUES = {"numactl": ("-C", "-N", "-m", "-p", "-i", "--physcpubind", "--cpunodebind", "--membind", "--preferred"),
                  "taskset": (), "nsys": "all", "ncu": ("-o", "--set", "-k"), "timeout": ("-s", "--signal", "-k", "--kill-after")}
CONTAINER_FLAGS = {"--nv", "--rocm", "--cleanenv", "-e", "--containall", "-c", "--writable-tmpfs", "--fakeroot",
                   "--no-home", "--nvccli"}
SUBCOMMAND_RUNNERS = {"uv": "run", "conda": "run", "mamba": "run", "micromamba": "run", "podman-hpc": "run",
                      "enroot": "start"}
IMAGE_FIRST = ("podman-hpc", "enroot")
RUNNER_VALUES = {"conda": ("-n", "--name", "-p", "--prefix", "--cwd"), "mamba": ("-n", "--name", "-p", "--prefix"),
                 "micromamba": ("-n", "--name", "-p", "--prefix"),
                 "uv": ("--python", "-p", "--with", "--project", "--directory", "--env-file", "--group", "--extra"),
                 "shifter": ("-V", "--volume", "-E", "-e", "--env", "--image", "--module", "-m", "--workdir", "-w"),
                 "podman-hpc": ("-v", "--volume", "-e", "--env", "-w", "--workdir", "--name", "--entrypoint",
                                "--userns", "--security-opt", "--network", "--cap-drop", "--cap-add", "--shm-size",
                                "--ipc", "--user", "-u", "--mount", "--device", "--env-file"),
                 "enroot": ("--mount", "-m", "--env", "-e", "--conf", "-c"), "stdbuf": ("-i", "-o", "-e"), "nohup": ()}


def wrapped(name: str, argv: list) -> list:
    """numactl, taskset, nsys, ncu, timeout: options (their values attached or next), then the command they run."""
    takes_value = WRAPPER_VALUES.get(name, ())
    i = 1 if name in ("nsys", "ncu") and argv[:1] and not argv[0].startswith("-") else 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if (takes_value == "all" or argv[i] in takes_value) and "=" not in argv[i] else 1
    if name in ("taskset", "timeout") and i < len(argv):
        i += 1  # the CPU mask; timeout(1)'s DURATION
    return argv[i:]


def in_container(argv: list) -> Optional[tuple]:
    """apptainer/singularity exec|run OPTIONS IMAGE CMD: (the image, the command); None for another subcommand."""
    if argv[:1] not in (["exec"], ["run"]):
        return None
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 1 if argv[i] in CONTAINER_FLAGS or "=" in argv[i] else 2
    return (argv[i] if i < len(argv) else None), argv[i + 1:]


def run_by(name: str, argv: list) -> Optional[tuple]:
    """A runner's own options, then (its image, where it takes one first; the command); None when
    the runner is not asked to run one (`conda activate`, `uv pip install`)."""
    words = argv[1:] if name in SUBCOMMAND_RUNNERS and argv[:1] == [SUBCOMMAND_RUNNERS[name]] else argv
    if name in SUBCOMMAND_RUNNERS and words is argv:
        return None
    takes_value = RUNNER_VALUES.get(name, ())
    i = 0
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in takes_value else 1
    image = None
    if name in IMAGE_FIRST and i < len(words):
        image, i = words[i], i + 1
    return image, words[i:]


def shell_script(path: str) -> bool:
    """A file whose #! line names a shell, with or without arguments (`#!/bin/bash -l`, `#!/usr/bin/env bash`)."""
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    words = first[2:].split()
    return first.startswith(b"#!") and any(os.path.basename(w) in (b"sh", b"bash") for w in words[:2])
