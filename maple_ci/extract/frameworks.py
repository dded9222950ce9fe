"""Frameworks beyond PyTorch's family, named as what they are (issue 25, E): JAX, TensorFlow/Keras,
Horovod, vLLM, Ray, fairseq, LLaMA-Factory. Decided from the launch's words (a console script or
module the framework's package installs, its own launcher) and then the imports of the program's
file in the checkout, read as text; None leaves the decision to `kind.framework` (PyTorch's family).

The console scripts and modules are the ones each package declares: fairseq's setup.py
(fairseq-train, fairseq-hydra-train, fairseq_cli.*), LLaMA-Factory's pyproject (llamafactory-cli,
lmf, llamafactory.*), vLLM's (vllm, vllm.entrypoints.*), Ray's (ray), Horovod's (horovodrun).
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Optional

from ..files import trailing_paths
from ..intent import OWN_RUNTIME

if TYPE_CHECKING:
    from .launch import Launch
    from .walk import Shell

# The program word's own name (a console script) or its -m module's top package -> the framework
# SGLang's server is `python -m sglang.launch_server` or its `sglang serve` console script, and its
# router's `-m sglang_router.launch_server` (https://docs.sglang.io/advanced_features/server_arguments.html, read 2026-11-29);
# PaddlePaddle's own launcher, `python -m paddle.distributed.launch --gpus 0,1,2,3 train.py`, runs
# once per node and starts one worker per device it lists (--gpus/--devices, --nproc_per_node:
# paddlepaddle.org.cn, docs/en/2.2 and zh/2.3 api/paddle/distributed/launch, read 2026-11-29); a port
# runs it as the source does, once per node
_PROGRAMS = {"fairseq": re.compile(r"fairseq-[\w-]+|fairseq_cli|fairseq"),
             "llamafactory": re.compile(r"llamafactory-cli|lmf|llamafactory"),
             "vllm": re.compile(r"vllm"), "sglang": re.compile(r"sglang|sglang_router"), "ray": re.compile(r"ray"),
             "paddle": re.compile(r"paddle")}
_LAUNCHERS = {"horovodrun": "horovod"}
# Console scripts of PyTorch Lightning programs: anemoi-training (ECMWF Anemoi; [project.scripts] and
# its pytorch-lightning dependency in github.com/ecmwf/anemoi-core training/pyproject.toml, read 2026-11-29)
LIGHTNING_CONSOLES = frozenset({"anemoi-training"})
# An import at a line's start (`import jax.numpy as jnp`, `from tensorflow import keras`), first
# match in this order: the most specific package a program needs wins (vLLM over the Ray it uses,
# Horovod over the PyTorch, TensorFlow or MXNet under it). Each framework's import names as its own
# install guide writes them: ChainerMN ships inside chainer (chainer.org), MXNet's Gluon toolkits
# (gluoncv, gluonnlp), PaddlePaddle's `import paddle` and PaddleNLP (paddlepaddle.org.cn), read 2026-11-29.
_IMPORTS = [(name, re.compile(rf"^[ \t]*(?:import|from)[ \t]+(?:{packages})\b", re.M)) for name, packages in (
    ("llamafactory", "llamafactory"), ("fairseq", "fairseq|fairseq_cli"), ("vllm", "vllm"), ("sglang", "sglang"),
    ("horovod", "horovod"), ("ray", "ray"), ("jax", "jax|jaxlib|flax|optax|haiku|equinox|orbax"),
    ("tensorflow", "tensorflow|keras|tf_keras"), ("chainer", "chainer|chainermn"),
    ("mxnet", "mxnet|gluoncv|gluonnlp"), ("paddle", "paddle|paddlenlp"))]
# tf.distribute's strategy classes, as the program constructs them (tf.distribute.MirroredStrategy(),
# ...experimental.MultiWorkerMirroredStrategy()): https://www.tensorflow.org/guide/distributed_training, read 2026-11-29
_TF_STRATEGIES = {"multi_worker_mirrored": re.compile(r"\bMultiWorkerMirroredStrategy\b"),
                  "mirrored": re.compile(r"\bMirroredStrategy\b")}
# A container image named for a framework with a runtime of its own (LUMI's lumi-jax-rocm-*.sif,
# NGC's nvcr.io/nvidia/jax and tensorflow): the program's, when its own file is not there to say
_IMAGES = [(name, re.compile(rf"(?i)(?:^|[^a-z]){name}(?:[^a-z]|$)")) for name in ("jax", "tensorflow")]
_TORCH = re.compile(r"^[ \t]*(?:import|from)[ \t]+torch\b", re.M)


def other_framework(launch: "Launch", texts: list[str]) -> Optional[str]:
    """The framework outside PyTorch's family that `launch` runs, or None: from its launch words,
    else the imports of its program_files (where a program builds its model with its framework
    outside its own file: `from pkg.models import Net`)."""
    named = _by_launch(launch)
    if named:
        return named
    for name, pattern in _IMPORTS:
        # a program with a runtime of its own that imports torch too is PyTorch's (a conversion, a loader)
        if any(imports(pattern, text) for text in texts) and not (
                name in OWN_RUNTIME and any(imports(_TORCH, text) for text in texts)):
            return name
    image = (launch.container.image or "").rsplit("/", 1)[-1] if launch.container and not texts else ""
    return next((name for name, pattern in _IMAGES if pattern.search(image)), None)


def imports(pattern: re.Pattern, source: str) -> bool:
    """Whether `source` imports what `pattern` matches unconditionally: an import in a `try:` block
    is an optional dependency (`try: import horovod.torch as hvd` / `except ImportError: hvd = None`,
    Python's own idiom for one, docs.python.org/3/tutorial/errors.html, read 2026-11-29), which the
    program may never use, so it does not say what the program is."""
    return any(not _in_try(source, match.start()) for match in pattern.finditer(source))


def _in_try(source: str, start: int) -> bool:
    """Whether the line at `start` is in the body of a `try:` (the nearest line above it indented
    less is `try:`)."""
    line = source[start:].split("\n", 1)[0]
    indent = len(line) - len(line.lstrip())
    for above in reversed(source[:start].splitlines()):
        stripped = above.strip()
        if stripped and not stripped.startswith("#") and len(above) - len(above.lstrip()) < indent:
            return stripped.startswith("try:")
    return False


# A TensorFlow program that places its work on devices itself (`with tf.device('/gpu:%d' % i)`,
# towers per GPU), picks which GPUs it sees (tf.config.set_visible_devices) or builds a strategy by
# another library's helper (TF-Agents' strategy_utils.get_strategy): its own code decides its devices
_TF_OWN_DEVICES = re.compile(r"\btf\.device\(|\bset_visible_devices\(|\bget_strategy\(|\btf\.distribute\b")


def tensorflow_single(program: str) -> bool:
    """Whether a TensorFlow process computes on one GPU: without code of its own that chooses
    devices, TensorFlow runs on the GPU with the lowest ID of those it sees
    (https://www.tensorflow.org/guide/gpu, read 2026-11-29)."""
    return not _TF_OWN_DEVICES.search(program)


def tensorflow_strategy(program: str) -> Optional[str]:
    """The tf.distribute strategy the program's source constructs; None for the default strategy or
    one outside the vocabulary (TPUStrategy, ParameterServerStrategy)."""
    return next((name for name, pattern in _TF_STRATEGIES.items() if pattern.search(program)), None)


def _by_launch(launch: "Launch") -> Optional[str]:
    launcher = next((_LAUNCHERS[name] for name, _ in launch.stages if name in _LAUNCHERS), None)
    return launcher or by_program(launch.entry)


def by_program(entry: Optional[str]) -> Optional[str]:
    """The framework whose console script or module `entry` is (`fairseq-train`, `-m vllm.x`), or
    whose name a console script carries as one of its dash-separated parts (`vf-vllm`, a project's
    own server on vLLM's engine)."""
    if not entry:
        return None
    word = entry.removeprefix("-m ").rsplit("/", 1)[-1].split(".", 1)[0]
    parts = [word, *(word.split("-") if "-" in word and not entry.startswith("-m ") else [])]
    return next((name for part in parts for name, pattern in _PROGRAMS.items() if pattern.fullmatch(part)), None)


def runtime_setup(entry: Optional[str], args: list[str]) -> bool:
    """Whether the command starts or stops a framework's runtime rather than the program (`ray
    start --head`, `ray stop`: Ray's cluster, which the job's driver program then joins)."""
    return bool(entry) and entry.rsplit("/", 1)[-1] == "ray" and args[:1] in (["start"], ["stop"], ["status"])


def program_source(entry: Optional[str], shell: "Shell") -> str:
    """The text of the program's own Python file in the checkout (`train.py`, or `-m pkg.train` as
    pkg/train.py or pkg/train/__main__.py); '' when it is not there."""
    if not entry:
        return ""
    if entry.startswith("-m "):
        # a repository's package under src/ too (the "src layout" the Python packaging guide
        # describes: packaging.python.org/en/latest/discussions/src-layout-vs-flat-layout, read 2026-11-29)
        path = entry[3:].replace(".", "/")
        candidates = [f"{root}{path}{tail}" for root in ("", "src/") for tail in (".py", "/__main__.py")]
    elif entry.endswith(".py"):
        candidates = [entry]
    else:
        module = console_module(entry, shell)
        candidates = [f"{module}.py", f"{module}/__init__.py"] if module else []
    return next((text for text in map(shell.read, [*candidates, *_checkout_tails(entry)]) if text), "")


# `from pkg.mod import x`, `import pkg.mod as m`: absolute imports (a relative one is inside a package)
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([A-Za-z_][\w.]*)[ \t]+import\b|import[ \t]+([A-Za-z_][\w.]*))", re.M)
_MAX_MODULES = 8


def program_files(entry: Optional[str], shell: "Shell") -> list[str]:
    """The texts of the program's own file and of the checkout's modules it imports; [] when the
    program's file is not in the checkout."""
    source = program_source(entry, shell)
    return [source, *imported_sources(entry, shell, source)] if source else []


def imported_sources(entry: Optional[str], shell: "Shell", source: str) -> list[str]:
    """The texts of the checkout's modules the program's `source` imports, one level deep (`from
    tqdne.training import get_pl_trainer`: tqdne/training.py), where a program builds its framework's
    objects (a Lightning Trainer) outside its own file. Python looks for them first in the program's
    folder (sys.path[0], the script's directory; the working directory for `-m`), then as the
    repository's own package (for a program run as a module, in its src/ layout too); the site's
    packages are not in the checkout, so they are not found, nor are Python's own looked for
    (sys.stdlib_module_names)."""
    module = bool(entry) and entry.startswith("-m ")
    folder = entry.rsplit("/", 1)[0] + "/" if entry and "/" in entry and not module else ""
    roots = dict.fromkeys((folder, "", *(["src/"] if module else [])))
    found = []
    names = dict.fromkeys(match[1] or match[2] for match in _IMPORT.finditer(source))
    for name in (name for name in names if name.split(".")[0] not in sys.stdlib_module_names):
        path = name.replace(".", "/")
        paths = [f"{where}{path}{tail}" for where in roots for tail in (".py", "/__init__.py")]
        text = next((t for t in map(shell.read, paths) if t), None)
        if text and text not in found:
            found.append(text)
        if len(found) >= _MAX_MODULES:
            break
    return found


def _checkout_tails(path: str) -> list[str]:
    """A program at a site path (`$HOME/examples/keras_mnist/mnist.py`, `/work/me/repo/train.py`):
    its trailing folder/file parts, longest first, down to its file name alone (a job script kept
    beside the program it names by the site's path), which the checkout may hold (the repository
    cloned there on the site), as a submitted job script is looked up (files.trailing_paths)."""
    if len(path.split("/")) < 3 or not path.endswith(".py"):
        return []
    tails = trailing_paths(path, shortest=1)[0 if path.startswith("/") else 1:]  # a relative path is itself read already
    return [tail for tail in tails if "$" not in tail]


def console_module(word: str, shell: "Shell") -> Optional[str]:
    """The module path (pkg/cli) of a console script the checkout itself declares: setup.py's
    entry_points `console_scripts` ("name=pkg.cli:main"), setup.cfg's [options.entry_points]
    (`name = pkg.cli:main`, setuptools' "Entry Points" guide) or pyproject.toml's [project.scripts]
    (name = "pkg.cli:main"), as the Python packaging guide writes them."""
    if not re.fullmatch(r"[\w.-]+", word):
        return None
    name = re.escape(word)
    for path, pattern in (("setup.py", rf"[\"']{name}\s*=\s*([\w.]+):"),
                          ("setup.cfg", rf"(?m)^\s*{name}\s*=\s*([\w.]+):"),
                          ("pyproject.toml", rf"(?m)^\s*\"?{name}\"?\s*=\s*\"([\w.]+):")):
        found = re.search(pattern, shell.read(path) or "")
        if found:
            return found.group(1).replace(".", "/")
    return None


def console_program(word: str) -> bool:
    """Whether `word` is a training framework's console script (fairseq-train, vllm, anemoi-training)."""
    return by_program(word) is not None or word in LIGHTNING_CONSOLES
