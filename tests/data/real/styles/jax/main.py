import jax
import jax.numpy as jnp
print(jax.devices())
