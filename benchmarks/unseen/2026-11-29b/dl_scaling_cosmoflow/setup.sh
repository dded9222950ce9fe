module load conda
conda activate
