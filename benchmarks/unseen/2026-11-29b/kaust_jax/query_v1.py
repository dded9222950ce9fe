import jax

jax.distributed.initialize()
print(jax.process_index(), jax.process_count(), jax.local_device_count(), jax.device_count())
