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
    # The allocation a center-side CI job runs in: Slurm's batch output variables (sbatch(1), "OUTPUT
    # ENVIRONMENT VARIABLES", https://slurm.schedmd.com/sbatch.html, read 2026-11-25); srun reads the
    # job id and the task layout from them. Input variables that run programs (SLURM_TASK_PROLOG) are not here.
    *(f"SLURM_{name}" for name in (
        "JOB_ID", "JOBID", "JOB_NAME", "JOB_NODELIST", "NODELIST", "JOB_NUM_NODES", "NNODES", "NTASKS", "NPROCS",
        "NTASKS_PER_NODE", "TASKS_PER_NODE", "CPUS_ON_NODE", "CPUS_PER_TASK", "JOB_CPUS_PER_NODE", "TRES_PER_TASK",
        "GPUS", "GPUS_ON_NODE", "GPUS_PER_NODE", "GPUS_PER_TASK", "JOB_GPUS", "NTASKS_PER_GPU", "MEM_PER_NODE",
        "MEM_PER_CPU", "MEM_PER_GPU", "JOB_PARTITION", "JOB_ACCOUNT", "JOB_QOS", "CLUSTER_NAME", "SUBMIT_DIR",
        "SUBMIT_HOST", "JOB_USER", "JOB_UID", "JOB_GID", "NODEID", "PROCID", "LOCALID", "ARRAY_JOB_ID",
        "ARRAY_TASK_ID", "ARRAY_TASK_COUNT", "ARRAY_TASK_MIN", "ARRAY_TASK_MAX", "RESTART_COUNT",
        "JOB_START_TIME", "JOB_END_TIME", "TOPOLOGY_ADDR", "TOPOLOGY_ADDR_PATTERN", "CONF", "GTIDS", "NODE_ALIASES",
        "PRIO_PROCESS", "TASK_PID", "WORKING_CLUSTER", "SCRIPT_CONTEXT", "JOB_RESERVATION", "JOB_LICENSES",
        "JOB_DEPENDENCY", "HET_SIZE", "SHARDS_ON_NODE", "UMASK")),
    "SLURMD_NODENAME", "ENVIRONMENT",  # ENVIRONMENT=BATCH: Slurm and PBS both set it
    # PBS Professional's job variables (PBS Professional User's Guide, "Environment Variables",
    # https://help.altair.com/2022.1.0/PBS%20Professional/PBSUserGuide2022.1.pdf, read 2026-11-25),
    # and NCI Gadi's resource counts (https://opus.nci.org.au, "PBS Environment Variables", read 2026-11-25)
    *(f"PBS_{name}" for name in (
        "JOBID", "JOBNAME", "NODEFILE", "O_WORKDIR", "O_HOST", "O_QUEUE", "QUEUE", "ENVIRONMENT", "JOBDIR",
        "O_HOME", "O_LOGNAME", "O_SHELL", "O_SYSTEM", "TASKNUM", "NODENUM", "ARRAY_INDEX", "ARRAY_ID",
        "NCPUS", "NGPUS", "VMEM", "NNODES")),
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
