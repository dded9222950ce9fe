import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
