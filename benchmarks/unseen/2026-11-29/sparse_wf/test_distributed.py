import jax

# Slurm's cluster detection: process count and index come from SLURM_NTASKS/SLURM_PROCID
jax.distributed.initialize()
print(jax.process_index(), jax.process_count(), jax.local_devices())
