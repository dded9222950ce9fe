"""How the programs around a launcher read their options (containers, binding tools, runners,
`time`, profilers). Launchers' grammars are the registry's (maple_ci/launchers), schedulers'
directives the scheduler units' (maple_ci/schedulers); the reader is maple_ci.launchers.options."""

from ..launchers import Spec, grammar, last, parse_options

__all__ = ["ACCELERATE", "CONTAINER", "DEEPSPEED", "ENROOT", "OCI_RUN", "PASSTHROUGH", "PROFILER", "RUNNER", "TIME",
           "TIMEOUT", "TORCHRUN", "Spec", "last", "parse_options"]

TORCHRUN, DEEPSPEED, ACCELERATE = grammar("torchrun"), grammar("deepspeed"), grammar("accelerate")

CONTAINER = Spec(  # apptainer/singularity exec|run, podman-hpc run, shifter
    aliases={"B": "bind", "H": "home", "W": "workdir", "o": "overlay", "e": "env", "v": "volume",
             "V": "volume", "w": "workdir"},
    values=frozenset({"bind", "env", "home", "workdir", "overlay", "pwd", "env_file", "mount",
                      "scratch", "security", "hostname", "network", "network_args", "app",
                      "fusemount", "image", "module", "volume", "name", "entrypoint"}),
    value_default=False,
    unknown_words_are_options=False,
)

ENROOT = Spec(  # `enroot start [options] [--] NAME|IMAGE [COMMAND]` (NVIDIA/enroot doc/cmd/start.md, read 2026-11-29)
    aliases={"c": "conf", "e": "env", "r": "root", "w": "rw", "m": "mount"},
    values=frozenset({"conf", "env", "rc", "mount"}),
    value_default=False,
    unknown_words_are_options=False,
)

# `podman run`, `podman-hpc run`, `docker run`: the options of the OCI engines' run that take a value
# (Docker CLI reference, "docker container run"; podman-run(1); read 2026-11-29), so the image is the
# first operand after them: `--ipc host IMAGE`, `--userns keep-id IMAGE` (Apptainer's --userns is a flag).
OCI_RUN = Spec(
    aliases={**CONTAINER.aliases, "u": "user", "l": "label", "m": "memory", "p": "publish", "h": "hostname"},
    values=CONTAINER.values | frozenset({"ipc", "pid", "net", "userns", "security_opt", "cap_add", "cap_drop", "device",
                                         "user", "gpus", "shm_size", "label", "memory", "cpus", "ulimit", "tmpfs",
                                         "runtime", "platform", "group_add", "pull", "publish", "log_driver", "uts",
                                         "cgroupns", "annotation", "add_host", "dns", "sysctl", "stop_signal"}),
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

TIMEOUT = Spec(  # GNU coreutils timeout(1): `timeout [OPTION] DURATION COMMAND [ARG]...` (man7.org, read 2026-11-29)
    aliases={"s": "signal", "k": "kill_after", "v": "verbose"},
    values=frozenset({"signal", "kill_after"}),
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
