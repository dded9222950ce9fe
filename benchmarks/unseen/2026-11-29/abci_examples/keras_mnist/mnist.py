import horovod.tensorflow.keras as hvd

hvd.init()
print(hvd.rank(), hvd.size())
