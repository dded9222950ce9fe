"""Requests in words: "train ViT with torchrun on 8 GPUs across two nodes, ZeRO-3, 4 hours".

Read with regexes over the lower-cased text, after number words become digits and near-miss
keywords ("torchrn") are corrected with difflib. A cluster named there is the source only when the
text says the job runs there now; "port to X" names a target, which is not part of a JobIntent.
"""

import difflib
import re
import shlex
from dataclasses import replace
from typing import Optional

from ..errors import MapleError
from ..intent import REQUIRED_FOR_PORT, JobIntent
from ..profile_files import cluster_data
from .. import schedulers
from .directives import per_node, seconds_to_walltime

_NUMBER_WORDS = {
    "a couple of": 2, "a couple": 2, "couple of": 2, "a pair of": 2, "a dozen": 12, "dozen": 12,
    "a single": 1, "single": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16,
}
_NUMBER_RE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _NUMBER_WORDS), key=len, reverse=True)) + r")\b")
_GPU = r"(?:gpus?|gcds?|tiles?|devices|accelerators|cards|[ahv]100s|h200s|gh200s|mi250xs?)"
_HOST = r"(?:nodes?|servers?|machines?|hosts?)"
# Keywords a typo is corrected to (difflib); short words are left alone, they collide too easily.
_KEYWORDS = ("nodes", "node", "servers", "machines", "torchrun", "deepspeed", "accelerate",
             "mpiexec", "mpirun", "sharded", "fully", "stage", "hours", "minutes", "megatron",
             "lightning", "pytorch", "across", "walltime", "account", "partition", "queue")
_LAUNCHER_WORDS = {"torchrun": "torchrun", "torch.distributed.run": "torchrun", "srun": "srun",
                   "mpiexec": "mpiexec", "mpirun": "mpirun", "ibrun": "ibrun",
                   "accelerate launch": "accelerate", "deepspeed launcher": "deepspeed"}
_ARG_STOP = {"on", "with", "using", "across", "for", "and", "to", "at", "in", "of", "via", "please",
             "from", "then", "but"}


def _fix_typos(text: str, vocabulary: tuple[str, ...]) -> str:
    def fix(match):
        word = match.group(0)
        if len(word) < 5 or word in vocabulary:
            return word
        close = difflib.get_close_matches(word, vocabulary, n=1, cutoff=0.8)
        return close[0] if close else word

    return re.sub(r"[a-z]+", fix, text)


def _request_walltime(text: str) -> Optional[str]:
    if match := re.search(r"\b(?:walltime|time limit|time)\D{0,12}(\d{1,4}:\d{2}:\d{2})\b", text):
        return match.group(1)
    # no bare "d": "3d parallel" is a strategy, not three days
    match = re.search(r"(\d+(?:\.\d+)?)\s*(days?|hours?|hrs?|h|minutes?|mins?)\b", text)
    if not match:
        return None
    unit = {"d": 86400, "h": 3600, "m": 60}[match.group(2)[0]]
    try:
        return seconds_to_walltime(round(float(match.group(1)) * unit))
    except ValueError as exc:
        raise MapleError(f"the requested time {match.group(0)!r} {exc}") from exc


def _request_entry(original: str) -> tuple[Optional[str], list[str]]:
    """The training program named in the request and the arguments written right after it."""
    match = re.search(r"(?:^|[\s`(\"'])(?:python[\d.]*\s+)?(-m\s+[\w.]+|[\w./-]+\.py)\b", original)
    if not match:
        return None, []
    entry = " ".join(match.group(1).split())
    try:
        tokens = shlex.split(original[match.end():].split("\n")[0].split("`")[0])
    except ValueError:
        tokens = original[match.end():].split()
    args: list[str] = []
    for token in tokens:
        stripped = token.rstrip(",;")
        if stripped.endswith(".") and not re.search(r"\d\.$", stripped):
            stripped = stripped[:-1]
        takes_value = args and args[-1].startswith("-") and "=" not in args[-1]
        if stripped.startswith("-") or (takes_value and stripped.lower() not in _ARG_STOP):
            args.append(stripped)
        else:
            break
        if stripped != token:
            break  # punctuation ends the command
    return entry, args


def _request_cluster(text: str) -> Optional[str]:
    """A cluster the request says the job runs on now ("from X", "currently on X", "runs on X",
    "written for X"); a cluster after "to"/"for" is where it should go, which is not ours to set."""
    for name, profile in cluster_data().items():
        display_name = str(profile.get("display_name", name)).lower()
        spellings = {name, display_name, display_name.split()[-1]}
        for spelling in sorted(spellings, key=len, reverse=True):
            for match in re.finditer(rf"\b{re.escape(spelling)}\b", text):
                before = text[max(0, match.start() - 60):match.start()]
                clause = re.split(r"[.;!?]|\bbut\b|\band\b", before)[-1]
                if re.search(r"\bfrom\s+(?:the\s+)?$|\bwritten\s+for\s+(?:the\s+)?$", clause):
                    return name
                if re.search(r"\b(?:on|at|of)\s+(?:the\s+)?$", clause) and re.search(
                        r"\b(?:currently|now|today|runs?|running|works?|working|existing)\b", clause):
                    return name
    return None


_CORRECTION = re.compile(r"[?,.;:!\u2014\u2013-]\s*(?:no|nope|actually|sorry|correction|i mean|scratch that)\b"
                         r"|\b(?:make (?:it|that)|rather|instead)\b")


def extract_request(text: str) -> JobIntent:
    """JobIntent of a request in words, e.g. "train ViT with torchrun on 8 GPUs across 2 nodes"."""
    names = tuple(cluster_data())
    lowered = _fix_typos(text.lower(), _KEYWORDS + names)
    words = _NUMBER_RE.sub(lambda m: str(_NUMBER_WORDS[m.group(1)]), lowered)
    nodes, gpus_per_node, world = _request_sizes(words)
    zero = re.search(r"\bzero[\s_-]*(?:stage[\s_-]*)?([123])\b|\bstage[\s_-]*([123])\b", words)
    framework = _request_framework(words, zero)
    launcher = _request_launcher(words, framework)
    entry, args = _request_entry(text)
    account = re.search(r"\b(?:account|allocation|project)\s*(?:is\s+|:|=)?\s*([\w-]*\d[\w-]*)", words)
    named = schedulers.mentioned(words)
    intent = JobIntent(
        source_cluster=_request_cluster(words),
        scheduler=named.name if named else "none",
        launcher=launcher,
        framework=framework,
        strategy=f"zero{zero.group(1) or zero.group(2)}" if zero else _request_strategy(words),
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        world_size=world,
        entrypoint=entry,
        script_args=args,
        walltime=_request_walltime(words),
        account=account.group(1) if account else None,
        queue=_request_queue(words),
    ).with_defaults()
    if intent.strategy is None and intent.world_size:
        intent = replace(intent, strategy="single" if intent.world_size == 1 else "ddp")
    missing = [name for name in REQUIRED_FOR_PORT if getattr(intent, name) is None]
    return replace(intent, missing=missing)


def _request_sizes(words: str) -> tuple[Optional[int], Optional[int], Optional[int]]:
    """(nodes, GPUs per node, world size) said in the request."""
    # "on a couple of nodes? no — four nodes": a correction; the value said last is the one meant
    corrected = bool(_CORRECTION.search(words))

    def first_int(*patterns: str) -> Optional[int]:
        for pattern in patterns:
            if found := list(re.finditer(pattern, words)):
                return int(found[-1 if corrected else 0].group(1))
        return None

    nodes = first_int(rf"(\d+)\s*(?:x\s+)?{_HOST}\b",
                      rf"\b(\d+)\s*[x×]\s*\d+\s*{_GPU}",  # "2 x 4 gpus": nodes x GPUs per node
                      r"(?:--nodes|--nnodes|\bn?nodes|--num[_-]nodes|--num[_-]machines)\s*=\s*(\d+)",
                      r"(?:--nodes|--nnodes|--num[_-]nodes|--num[_-]machines)\s+(\d+)",
                      r"(?:^|\s)-N\s*(\d+)\b")
    each = first_int(
        rf"(\d+)\s*(?:x\s+)?{_GPU}\s*(?:per|/|on each|in each|each|an?)\s*{_HOST}\b",
        rf"(\d+)\s*{_GPU}\s+each\b",
        rf"\d+\s*{_HOST}\s*(?:x|×|with|of)\s*(\d+)\s*{_GPU}",
        rf"(\d+)-{_GPU}\s+{_HOST}",  # "two 4-gpu nodes"
        rf"\b\d+\s*[x×]\s*(\d+)\s*{_GPU}",
        r"(?:--gpus[_-]per[_-]node|--nproc[_-]per[_-]node|\bnproc[_-]per[_-]node|--num[_-]gpus)\s*[= ]\s*(\d+)")
    total = first_int(rf"(\d+)\s*(?:total\s+)?{_GPU}(?!\s*(?:per\b|/|each\b|on each\b|in each\b|an?\s+{_HOST}))\b")
    if nodes is None and re.search(rf"\b(?:a|an)\s+{_HOST}\b", words):
        nodes = 1
    return nodes, each or per_node(total, nodes), total if total and not each else None


_FRAMEWORK_WORDS = (("accelerate", "accelerate"), ("deepspeed", "deepspeed"), ("megatron", "megatron"),
                    ("lightning", "lightning"))
# Frameworks outside PyTorch's family, named as whole words (issue 25, E): first, being the more specific
_OTHER_FRAMEWORKS = ((r"\bllama[\s-]*factory\b", "llamafactory"), (r"\bfairseq\b", "fairseq"), (r"\bvllm\b", "vllm"),
                     (r"\bsglang\b", "sglang"), (r"\bhorovod\b", "horovod"), (r"\bray\b", "ray"),
                     (r"\b(?:jax|flax)\b", "jax"), (r"\b(?:tensorflow|keras)\b", "tensorflow"),
                     (r"\bchainer(?:mn)?\b", "chainer"), (r"\bmxnet\b", "mxnet"), (r"\bpaddle(?:paddle)?\b", "paddle"))
_STRATEGY_WORDS = ((r"\bfsdp\b|fully[\s-]*sharded", "fsdp"), (r"\b3d\b|pipeline[\s-]*parallel", "3d"),
                   (r"tensor[\s-]*parallel", "tp"), (r"\bddp\b|data[\s-]*parallel", "ddp"))


def _request_launcher(words: str, framework: str) -> str:
    named = next((value for key, value in _LAUNCHER_WORDS.items() if re.search(rf"\b{re.escape(key)}\b", words)), None)
    if named is None and framework in ("deepspeed", "accelerate"):
        return framework  # naming the framework is naming its launcher
    return named or "python"


def _request_framework(words: str, zero) -> str:
    if zero and "accelerate" not in words:
        return "deepspeed"  # a ZeRO stage is DeepSpeed's
    other = next((name for pattern, name in _OTHER_FRAMEWORKS if re.search(pattern, words)), None)
    return other or next((name for word, name in _FRAMEWORK_WORDS if word in words), "pytorch")


def _request_strategy(words: str) -> Optional[str]:
    return next((name for pattern, name in _STRATEGY_WORDS if re.search(pattern, words)), None)


def _request_queue(words: str) -> Optional[str]:
    queue = re.search(r"\b(?:queue|qos|partition)\s*(?:is\s+|:|=)?\s*([a-z][\w-]*)", words)
    if queue and queue.group(1) in ("the", "a", "and", "with", "for", "on"):
        queue = None
    queue = queue or re.search(r"\b(?!the\b|a\b|any\b|which\b)([a-z][\w-]*)\s+(?:queue|qos|partition)\b", words)
    return queue.group(1) if queue else None
