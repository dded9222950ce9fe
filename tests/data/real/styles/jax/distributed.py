import jax

jax.distributed.initialize()
print(jax.device_count(), jax.local_device_count())
