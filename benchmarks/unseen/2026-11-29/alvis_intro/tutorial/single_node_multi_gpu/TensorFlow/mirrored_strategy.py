import argparse
import tensorflow as tf

p = argparse.ArgumentParser(); p.add_argument("--epochs", type=int, default=1)
args = p.parse_args()
strategy = tf.distribute.MirroredStrategy()
print("replicas", strategy.num_replicas_in_sync)
