module load conda/2022-07-19
conda activate
