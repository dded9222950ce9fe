import horovod.tensorflow.keras as hvd
hvd.init()
