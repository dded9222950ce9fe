from accelerate import Accelerator
acc = Accelerator()
print(acc.mixed_precision, acc.num_processes)
