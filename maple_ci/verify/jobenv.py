"""The environment a verification job starts from, as `env -i` plus an allowlist: what a batch job
needs from the machine it runs on, never the credentials of the process that starts it (the bot's
GITHUB_TOKEN, the action's INPUT_* and MAPLE_GITLAB_* secrets, MAPLE_LLM_API_KEY; at the center the
CI job's CI_JOB_TOKEN and the site's id_token), and nothing that makes a program run code of the
caller's choosing. The slurm and local backends, in an allocation too, start every job with it.

Names are listed one by one, not by family: a family such as LMOD_* also holds LMOD_SETTARG_CMD,
which Lmod's `module` runs after every command, and CUDA_* holds CUDA_INJECTION64_PATH. The module
system, conda and the GPU and MPI stacks are rebuilt by the site's startup file (BASH_ENV, a plain
absolute path: Lmod's way of giving batch shells `module`) and by the modules the script loads.
"""

import re
from typing import Mapping

from .. import schedulers

_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TZ", "HOSTNAME",
    "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONNOUSERSITE",  # switches, not paths
    "BASH_ENV",  # the site's startup file (checked below)
    # the file systems sites name in their login environment (NERSC's $SCRATCH, $PSCRATCH, $CFS; TACC's $WORK)
    "SCRATCH", "PSCRATCH", "CFS", "WORK",
    # the network: proxies (without credentials, below) and the certificates that go with them
    "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "DS_ACCELERATOR",  # DeepSpeed's device choice (miniapps/deepspeed_zero3.py)
    "OMP_NUM_THREADS", "MAPLE_MINIAPP_TIMEOUT",
    # the devices the allocation gives the job (Slurm's GPU plugin, ROCm, Level Zero)
    "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ZE_AFFINITY_MASK",
    "ENVIRONMENT",  # ENVIRONMENT=BATCH: Slurm and PBS both set it
    # The allocation a center-side CI job runs in: each scheduler's job variables (its unit's
    # job_environment); srun and mpiexec read the job id and the task layout from them.
    *(name for unit in schedulers.all() for name in unit.job_environment),
})
_SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|KEY|JWT|CREDENTIAL", re.IGNORECASE)
# bash expands BASH_ENV (command substitution included) when a non-interactive shell starts.
_PLAIN_PATH = re.compile(r"/[A-Za-z0-9_./+-]*")
_URL_CREDENTIALS = re.compile(r"//[^/@]*@")  # http://user:password@proxy:3128


def job_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of env that a verification job may see."""
    kept = {}
    for name, value in env.items():
        if not (name in _NAMES or name.startswith("LC_")) or _SECRET.search(name):
            continue
        if name == "BASH_ENV" and not _PLAIN_PATH.fullmatch(value):
            continue
        if name.lower().endswith("_proxy") and _URL_CREDENTIALS.search(value):
            continue
        kept[name] = value
    return kept
