# Environment shared by the accelerate Slurm examples (sourced, not executed).
module load cuda/12.1
source /opt/conda/etc/profile.d/conda.sh
conda activate accelerate-examples
export HF_HOME=/scratch/$USER/hf_cache
export NCCL_ASYNC_ERROR_HANDLING=1
