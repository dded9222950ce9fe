"""What the memory and walltime estimates know of a job: read from the program's arguments, the
config files they name inside the checkout (a DeepSpeed JSON, a Hugging Face config.json), and
templates/estimates/models.yaml for models named by their Hub id. Nothing is run or fetched; a
value given only at run time ($MBS) is not known here and is named as missing.
"""

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

from ..data_cache import load_yaml
from ..errors import MapleError
from ..extract.kind import option_in_args
from ..files import checkout_root, read_inside
from ..intent import JobIntent
from ..paths import templates_dir
from ..programs import model_parallel


@dataclass(frozen=True)
class Architecture:
    """A decoder (or encoder) transformer's shape; ffn 0 means 4 * hidden, kv_heads 0 means heads."""

    hidden: int
    layers: int
    heads: int
    vocab: int
    ffn: int = 0
    kv_heads: int = 0
    positions: int = 0  # learned position embeddings (GPT-2, BERT); 0 for rotary ones
    gated: bool = False  # a SwiGLU MLP: three matrices of hidden x ffn
    tied: bool = False  # the output layer shares the embedding's weights

    def params(self) -> int:
        """Weights of the matrices (biases and norms, well under 1 %, left out)."""
        ffn = self.ffn or 4 * self.hidden
        kv = self.hidden * (self.kv_heads or self.heads) // self.heads
        attention = 2 * self.hidden * self.hidden + 2 * self.hidden * kv
        mlp = (3 if self.gated else 2) * self.hidden * ffn
        embeddings = (1 if self.tied else 2) * self.vocab * self.hidden + self.positions * self.hidden
        return self.layers * (attention + mlp) + embeddings

    def largest_layer(self) -> int:
        """The largest single weight matrix (what ZeRO-3 gathers whole): the embedding or an MLP one."""
        return max(self.vocab * self.hidden, self.hidden * (self.ffn or 4 * self.hidden))


@dataclass
class Workload:
    """The inputs of the estimates, each None when the job does not say it."""

    model: Optional[Architecture] = None
    model_from: str = ""  # where the shape was read, for the header
    micro_batch: Optional[int] = None
    seq: Optional[int] = None
    precision: Optional[str] = None  # "bf16" | "fp16" | "tf32" | "fp32"
    checkpointing: str = "none"  # "none" | "selective" | "full"
    flash: bool = False  # flash attention (or SDPA) keeps no attention scores
    tensor: int = 1
    pipeline: int = 1
    zero_stage: Optional[int] = None  # from a DeepSpeed config the program names
    model_named: Optional[str] = None  # the model the arguments name, known or not
    missing: list[str] = field(default_factory=list)

    @property
    def mixed(self) -> bool:
        """Mixed-precision training (16-bit weights and gradients, fp32 master copy); assumed when unsaid."""
        return self.precision in (None, "bf16", "fp16")


@lru_cache(maxsize=1)
def known_models() -> dict:
    return load_yaml(templates_dir() / "estimates" / "models.yaml")["models"]


def known_architecture(key: str) -> Architecture:
    """The shape of a model of templates/estimates/models.yaml, by its key there."""
    return Architecture(**{k: v for k, v in known_models()[key].items() if k not in ("source", "read")})


def _section(config: dict, key: str) -> dict:
    """A config's sub-table, {} when it is absent or not a table (a hand-written file may say anything)."""
    value = config.get(key)
    return value if isinstance(value, dict) else {}


def _number(value: Optional[str]) -> Optional[int]:
    return int(value) if value is not None and value.isdigit() and int(value) > 0 else None


def _on(value: Optional[str]) -> bool:
    """A flag given bare or with a true value (--bf16, --bf16 True, --gradient_checkpointing=true)."""
    return value is not None and value.lower() in ("", "true", "1", "yes")


def _arg_number(args: list[str], *names: str) -> Optional[int]:
    return next((n for name in names if (n := _number(option_in_args(args, name))) is not None), None)


class Checkout:
    """Config files the program names, read as text only inside the source's checkout."""

    def __init__(self, base_dir: Optional[Path]):
        self.base_dir = Path(base_dir) if base_dir else None
        self.root = checkout_root(self.base_dir / "script") if self.base_dir else None

    def json(self, path: Optional[str]) -> Optional[dict]:
        if not path or self.base_dir is None or "$" in path:
            return None
        full = Path(os.path.abspath(self.base_dir / path))  # lexical: read_inside refuses links itself
        try:
            data = json.loads(read_inside(self.root, full.relative_to(self.root)))
        except (MapleError, ValueError, RecursionError):
            return None
        return data if isinstance(data, dict) else None


_PRECISION = {"bf16": "bf16", "bfloat16": "bf16", "bf16-mixed": "bf16", "bf16-true": "bf16",
              "fp16": "fp16", "float16": "fp16", "16": "fp16", "16-mixed": "fp16", "half": "fp16",
              "fp32": "fp32", "float32": "fp32", "32": "fp32", "32-true": "fp32", "no": "fp32", "tf32": "tf32"}


def _precision(args: list[str], intent: JobIntent, ds: dict) -> Optional[str]:
    for flag in ("bf16", "fp16", "tf32"):
        if _on(option_in_args(args, flag)):
            return flag
    for name in ("precision", "mixed_precision", "dtype", "torch_dtype", "trainer.precision"):
        if (word := _PRECISION.get(str(option_in_args(args, name)).lower())):
            return word
    for options in (intent.launcher_options, intent.config_options):  # accelerate's, on its line or in its config file
        if (word := _PRECISION.get(options.get("mixed_precision", "").lower())):
            return word
    return next((kind for kind in ("bf16", "fp16") if _section(ds, kind).get("enabled") is True), None)


def _checkpointing(args: list[str], intent: JobIntent) -> str:
    granularity = option_in_args(args, "recompute-granularity")
    if granularity in ("full", "selective"):
        return granularity
    if option_in_args(args, "recompute-activations") is not None:
        return "selective"  # Megatron: --recompute-activations is selective recomputation
    full = ("gradient_checkpointing", "checkpoint-activations", "activation_checkpointing", "activation-checkpointing")
    if any(_on(option_in_args(args, name)) for name in full):
        return "full"
    accelerate = (intent.launcher_options.get("fsdp_activation_checkpointing"),
                  intent.config_options.get("fsdp_activation_checkpointing"))
    return "full" if any(_on(value) for value in accelerate) else "none"


def _flash(args: list[str]) -> bool:
    if any(option_in_args(args, name) is not None for name in ("use-flash-attn", "use_flash_attention_2", "flash_attn")):
        return True
    return str(option_in_args(args, "attn_implementation")).startswith(("flash_attention", "sdpa"))


def _megatron_model(args: list[str]) -> Optional[Architecture]:
    """Megatron-LM's model flags (arguments.py): the shape is all in the arguments."""
    sizes = {name: _arg_number(args, name) for name in ("num-layers", "hidden-size", "num-attention-heads")}
    if None in sizes.values():
        return None
    vocab = _arg_number(args, "padded-vocab-size", "vocab-size")
    if vocab is None and ("GPT2BPETokenizer" in args or str(option_in_args(args, "vocab-file")).endswith("gpt2-vocab.json")):
        vocab = 50257  # the GPT-2 BPE vocabulary
    if vocab is None:
        return None
    rotary = option_in_args(args, "position-embedding-type") == "rope"
    return Architecture(hidden=sizes["hidden-size"], layers=sizes["num-layers"], heads=sizes["num-attention-heads"],
                        vocab=vocab, ffn=_arg_number(args, "ffn-hidden-size") or 0,
                        kv_heads=_arg_number(args, "num-query-groups") or 0,
                        positions=0 if rotary else (_arg_number(args, "max-position-embeddings", "seq-length") or 0),
                        gated=option_in_args(args, "swiglu") is not None,
                        tied=option_in_args(args, "untie-embeddings-and-output-weights") is None)


def _first_key(config: dict, *keys: str):
    return next((config[key] for key in keys if isinstance(config.get(key), int) and config[key] > 0), None)


def hf_architecture(config: dict) -> Optional[Architecture]:
    """A Hugging Face config.json's shape (GPT-2's n_embd/n_layer/n_head spellings too)."""
    shape = [_first_key(config, *keys) for keys in (("hidden_size", "n_embd", "d_model"),
                                                     ("num_hidden_layers", "n_layer", "num_layers"),
                                                     ("num_attention_heads", "n_head", "num_heads"), ("vocab_size",))]
    if None in shape:
        return None
    rotary = "rope_theta" in config or config.get("position_embedding_type") == "rotary"
    return Architecture(*shape, ffn=_first_key(config, "intermediate_size", "n_inner", "ffn_dim", "d_ff") or 0,
                        kv_heads=_first_key(config, "num_key_value_heads") or 0,
                        positions=0 if rotary else (_first_key(config, "max_position_embeddings", "n_positions") or 0),
                        gated=config.get("hidden_act") == "silu", tied=config.get("tie_word_embeddings", True) is not False)


def _model_name(args: list[str]) -> Optional[str]:
    return option_in_args(args, "model_name_or_path", "model_name", "pretrained_model_name_or_path", "model_id") or None


def _named_model(args: list[str], checkout: Checkout) -> tuple[Optional[Architecture], str]:
    """(shape, where from) of the model the program names: a known Hub id, or a config.json in the checkout."""
    name = _model_name(args)
    known = {key.lower(): key for key in known_models()}
    key = known.get(str(name).lower()) or known.get(str(name).lower().rsplit("/", 1)[-1])
    if key:
        return known_architecture(key), f"{key} (templates/estimates/models.yaml)"
    for path in (option_in_args(args, "config_name", "model_config"), name and f"{name}/config.json"):
        config = checkout.json(path) if path else None
        if config and (arch := hf_architecture(config)):
            return arch, f"{path} in the checkout"
    return None, ""


def read_workload(intent: JobIntent, base_dir: Optional[Path]) -> Workload:
    args = intent.script_args
    checkout = Checkout(base_dir)
    ds = checkout.json(intent.configs.get("deepspeed") or option_in_args(args, "deepspeed_config", "deepspeed")) or {}
    model, model_from = (_megatron_model(args), "the program's Megatron arguments")
    if model is None:
        model, model_from = _named_model(args, checkout)
    parallel = model_parallel(args)
    stage = _section(ds, "zero_optimization").get("stage")
    work = Workload(model=model, model_from=model_from,
                    micro_batch=_arg_number(args, "micro-batch-size", "per_device_train_batch_size", "batch_size")
                    or _number(str(ds.get("train_micro_batch_size_per_gpu", ""))),
                    seq=_arg_number(args, "seq-length", "max_seq_length", "block_size", "seq_len", "max_length",
                                    "model_max_length", "sequence_length"),
                    precision=_precision(args, intent, ds), checkpointing=_checkpointing(args, intent),
                    flash=_flash(args), tensor=parallel.get("tensor", 1), pipeline=parallel.get("pipeline", 1),
                    zero_stage=stage if stage in (0, 1, 2, 3) else None)
    work.model_named = _model_name(args)
    size = (f"the size of {work.model_named} (not in templates/estimates/models.yaml; no config.json for it in the "
            "checkout)" if work.model_named else "the model's size (a known --model_name_or_path, a config.json in "
            "the checkout, or Megatron's --num-layers/--hidden-size/--num-attention-heads)")
    work.missing = [what for what, value in ((size, model),
                                             ("the micro-batch size", work.micro_batch), ("the sequence length", work.seq))
                    if value is None]
    return work
