"""The environment a verification job starts from: what a batch job needs from the machine it runs
on, never the credentials of the process that starts it (the bot's GITHUB_TOKEN, the action's
INPUT_* and MAPLE_GITLAB_* secrets, MAPLE_LLM_API_KEY; at the center the CI job's CI_JOB_TOKEN and
the site's id_token). The slurm and local backends, in an allocation too, start every job with it.

An allowlist, because secrets live under names nobody can list in advance; then a denylist over it,
because an allowed family could still hold one (a SLURM_ or CONDA_ name ending in _TOKEN).
"""

import re
from typing import Mapping

_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TZ", "HOSTNAME",
    # where the site's software is: modules set these, and a job inherits them from the login shell
    "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "PKG_CONFIG_PATH", "MANPATH", "PYTHONPATH",
    "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "VIRTUAL_ENV",
    # module systems (Lmod, Environment Modules); BASH_ENV is how Lmod and sites give batch shells `module`
    "MODULEPATH", "MODULESHOME", "LOADEDMODULES", "_LMFILES_", "BASH_ENV",
    # the file systems sites name in their login environment (NERSC's $SCRATCH, $PSCRATCH, $CFS; TACC's $WORK)
    "SCRATCH", "PSCRATCH", "CFS", "WORK",
    # the network: proxies and the certificates that go with them
    "http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "DS_ACCELERATOR",  # DeepSpeed's device choice (miniapps/deepspeed_zero3.py)
})
_PREFIXES = (
    "LC_",
    "SLURM_", "PBS_", "PALS_",  # the scheduler's: the allocation a center-side CI job runs in
    "LMOD_", "__LMOD_", "_ModuleTable", "MODULES_",  # module system state
    "CONDA_", "_CE_", "PYENV_",  # conda and pyenv
    # the MPI, interconnect and GPU stacks a site's environment configures
    "CRAY_", "CRAYPE_", "PE_", "MPICH_", "I_MPI_", "FI_", "UCX_", "NCCL_", "CUDA_", "NVIDIA_", "ROCM_", "ROCR_",
    "HIP_", "ZE_", "OMP_",
    "MAPLE_MINIAPP_",  # the mini-app's own settings (MAPLE_MINIAPP_TIMEOUT)
)
_SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|KEY|JWT|CREDENTIAL|^(GITHUB|INPUT|ACTIONS|CI_JOB|MAPLE_GITLAB)_",
                     re.IGNORECASE)
# bash expands BASH_ENV (command substitution included) when a non-interactive shell starts.
_EXPANDS = re.compile(r"[$`]")
_URL_CREDENTIALS = re.compile(r"//[^/@]*@")  # http://user:password@proxy:3128


def job_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of env that a verification job may see."""
    kept = {}
    for name, value in env.items():
        if not (name in _NAMES or name.startswith(_PREFIXES)) or _SECRET.search(name):
            continue
        if name == "BASH_ENV" and (_EXPANDS.search(value) or not value.startswith("/")):
            continue
        if name.lower().endswith("_proxy") and _URL_CREDENTIALS.search(value):
            continue
        kept[name] = value
    return kept
