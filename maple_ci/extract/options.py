"""How launchers, schedulers and wrappers read their options: which spellings mean the same
option, which take a value (or two), and where the command they run begins."""

import re
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Spec:
    """How a program reads its options: aliases map a spelling to one name; names in `flags`
    take no value, names in `pairs` take two; the rest take one if `value_default`."""

    aliases: dict
    flags: frozenset = frozenset()
    values: frozenset = frozenset()
    pairs: frozenset = frozenset()
    value_default: bool = True
    env_name_value: bool = False  # MPICH's `-env NAME VALUE` (two words) besides `--env NAME=VALUE`
    # A launcher's `$EXTRA_ARGS` (unknown here) holds options: the command comes after it. Not so
    # where an operand comes first (a container's image, a runner's command).
    unknown_words_are_options: bool = True

    def takes_value(self, name: str) -> bool:
        if name in self.flags:
            return False
        return self.value_default or name in self.values


def parse_options(argv: list[str], spec: Spec) -> tuple[dict[str, list], list[str]]:
    """Options up to the first operand, as {name: [values]}; the operand and what follows."""
    opts: dict[str, list] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            return opts, argv[i + 1:]
        unknown = re.fullmatch(r"\$\{?\w+(?:\[[@*]\])?\}?", token)
        if unknown and spec.unknown_words_are_options and i + 1 < len(argv):
            i += 1  # `srun $SRUN_ARGS -u ...`: options only the job knows; the command comes after
            continue
        if not token.startswith("-") or token == "-":
            break
        body, eq, value = token.lstrip("-").partition("=")
        if token.startswith("--"):
            name = spec.aliases.get(body, body.replace("-", "_"))
        elif body in spec.aliases:  # single-dash long options: -np, -ppn, -genv
            name = spec.aliases[body]
        elif len(token) > 2 and token[1] in spec.aliases:  # attached short value: -N2, -lselect=2
            name, eq, value = spec.aliases[token[1]], "=", token[2:]
        else:
            name = spec.aliases.get(body, body.replace("-", "_"))
        i += 1
        if eq:
            values = [value]
        elif name in spec.pairs and i + 1 < len(argv):
            values, i = argv[i:i + 2], i + 2
        elif spec.takes_value(name) and i < len(argv) and not name.startswith("no_"):  # --no-x never takes one
            values, i = [argv[i]], i + 1
            # MPICH's `-env NAME VALUE` versus PALS's `--env NAME=VALUE`
            if spec.env_name_value and name == "env" and "=" not in values[0] and i < len(argv):
                values, i = [f"{values[0]}={argv[i]}"], i + 1
        else:
            values = [""]
        opts.setdefault(name, []).extend(values)
    return opts, argv[i:]


def last(opts: dict, name: str) -> Optional[str]:
    values = opts.get(name)
    return values[-1] if values else None


SLURM = Spec(
    aliases={"A": "account", "N": "nodes", "n": "ntasks", "t": "time", "q": "qos", "p": "partition",
             "G": "gpus", "c": "cpus_per_task", "C": "constraint", "J": "job_name", "o": "output",
             "e": "error", "w": "nodelist", "x": "exclude", "D": "chdir", "d": "dependency",
             "a": "array", "b": "begin", "i": "input", "L": "licenses", "M": "clusters",
             "m": "distribution", "S": "core_spec", "F": "nodefile", "B": "extra_node_info",
             "T": "threads", "r": "relative", "l": "label", "u": "unbuffered", "v": "verbose",
             "K": "kill_on_bad_exit", "k": "no_kill", "X": "disable_status", "Q": "quiet",
             "s": "oversubscribe", "O": "overcommit", "H": "hold", "I": "immediate",
             "E": "preserve_env", "Z": "no_allocate", "h": "help", "W": "wait",
             "tasks-per-node": "ntasks_per_node"},
    flags=frozenset({"exclusive", "overcommit", "oversubscribe", "contiguous", "hold", "requeue",
                     "no_requeue", "spread_job", "use_min_nodes", "parsable", "wait", "test_only",
                     "ignore_pbs", "label", "unbuffered", "verbose", "quiet", "pty", "no_kill",
                     "multi_prog", "exact", "whole", "overlap", "disable_status", "kill_on_bad_exit",
                     "immediate", "reboot", "no_allocate", "preserve_env", "x11", "propagate",
                     "send_libs", "get_user_env", "help", "usage", "nice"}),
)

PBS = Spec(
    aliases={c: c for c in "AacejklmMNopqrSuvWJP"},
    values=frozenset("AacejklmMNopqrSuvWJP"),
    value_default=False,
)

# MPICH/PALS (-n, --ppn, --depth, --env), Open MPI (-np, -N, --map-by, -x, --mca), TACC ibrun (-n, -o)
MPI = Spec(
    aliases={"n": "np", "np": "np", "ppn": "ppn", "npernode": "ppn", "N": "ppn", "d": "depth",
             "f": "hostfile", "machinefile": "hostfile", "hostfile": "hostfile", "H": "host",
             "host": "host", "x": "export", "env": "env", "genv": "env", "envall": "envall",
             "genvall": "envall", "mca": "mca", "gmca": "mca", "wdir": "wdir", "o": "offset",
             "cpu-bind": "cpu_bind", "map-by": "map_by", "bind-to": "bind_to"},
    values=frozenset({"np", "ppn", "depth", "cpu_bind", "hostfile", "host", "export", "env",
                      "map_by", "bind_to", "rank_by", "wdir", "prefix", "mem_bind", "pmi",
                      "offset", "envlist", "launcher", "rankfile", "output_filename", "label_mode"}),
    pairs=frozenset({"mca"}),
    value_default=False,
    env_name_value=True,
)

TORCHRUN = Spec(
    aliases={"m": "module"},
    flags=frozenset({"standalone", "module", "no_python", "run_path", "virtual_local_rank", "use_env"}),
)

DEEPSPEED = Spec(
    aliases={"H": "hostfile", "i": "include", "e": "exclude", "num_accelerators": "num_gpus"},
    flags=frozenset({"module", "no_python", "no_local_rank", "no_ssh_check", "force_multi",
                     "save_pid", "elastic_training", "bind_cores_to_rank", "no_ssh"}),
)

ACCELERATE = Spec(
    aliases={"m": "module", "q": "quiet"},
    flags=frozenset({"cpu", "multi_gpu", "tpu", "mps", "use_deepspeed", "use_fsdp", "use_megatron_lm",
                     "use_xpu", "ipex", "module", "no_python", "quiet", "debug", "same_network",
                     "tpu_use_cluster", "tpu_use_sudo", "enable_cpu_affinity", "downcast_bf16"}),
)

CONTAINER = Spec(  # apptainer/singularity exec|run, podman-hpc run, shifter
    aliases={"B": "bind", "H": "home", "W": "workdir", "o": "overlay", "e": "env", "v": "volume",
             "V": "volume", "w": "workdir"},
    values=frozenset({"bind", "env", "home", "workdir", "overlay", "pwd", "env_file", "mount",
                      "scratch", "security", "hostname", "network", "network_args", "app",
                      "fusemount", "image", "module", "volume", "name", "entrypoint"}),
    value_default=False,
    unknown_words_are_options=False,
)

PASSTHROUGH = Spec(  # env, numactl, taskset, stdbuf, nice: options, then the real command
    aliases={"u": "unset", "N": "cpunodebind", "m": "membind", "C": "physcpubind", "c": "cpu_list",
             "i": "interleave", "p": "preferred", "o": "output", "n": "adjustment"},
    values=frozenset({"unset", "cpunodebind", "membind", "physcpubind", "cpu_list", "interleave",
                      "preferred", "output", "adjustment"}),
    value_default=False,
    unknown_words_are_options=False,
)

RUNNER = Spec(  # `uv run`, `pipenv run`, `poetry run`, `conda run -n env`: options, then the command
    aliases={"n": "name", "p": "prefix"},
    values=frozenset({"with", "python", "project", "directory", "env_file", "group", "extra", "name",
                      "prefix", "index_url"}),
    value_default=False,
    unknown_words_are_options=False,
)


TIME = Spec(  # bash's `time -p` and GNU time (-v, -a, -o FILE, -f FORMAT): options, then the command
    aliases={"p": "portability", "v": "verbose", "a": "append", "q": "quiet", "o": "output", "f": "format"},
    values=frozenset({"output", "format"}),
    value_default=False,
    unknown_words_are_options=False,
)

PROFILER = Spec(  # nsys profile / ncu: options (most take a value), then the command
    aliases={"o": "output", "t": "trace", "s": "sample", "f": "force_overwrite", "c": "capture_range",
             "d": "duration", "w": "show_output", "b": "backtrace", "x": "stop_on_exit", "k": "kernel_name",
             "n": "inherit_environment", "e": "env_var", "y": "delay", "p": "nvtx_capture"},
    flags=frozenset({"stats", "help", "export", "verbose", "quiet"}),
    unknown_words_are_options=False,
)
