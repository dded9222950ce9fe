import argparse
import jax
p = argparse.ArgumentParser(); p.add_argument("--n-epochs", type=int); p.add_argument("--learning-rate", type=float)
print(p.parse_args(), jax.devices())
