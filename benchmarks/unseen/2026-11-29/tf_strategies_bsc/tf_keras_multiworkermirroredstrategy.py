import tensorflow as tf

resolver = tf.distribute.cluster_resolver.SlurmClusterResolver()
strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
