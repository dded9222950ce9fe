import sys
import torch

model = torch.nn.DataParallel(torch.nn.Linear(10, 10).cuda())
print("workers", sys.argv[1], torch.cuda.device_count())
