import tensorflow as tf
import horovod.tensorflow.keras as hvd

hvd.init()
