"""Megatron-style tensor parallelism of a toy MLP over every rank of one node (stub for the corpus)."""
import os

import torch
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.in_proj = nn.Linear(10, 32)
        self.relu = nn.ReLU()
        self.out_proj = nn.Linear(32, 5)

    def forward(self, x):
        return self.out_proj(self.relu(self.in_proj(x)))


world_size = int(os.environ["WORLD_SIZE"])
tp_mesh = init_device_mesh("cuda", (world_size,))
model = parallelize_module(ToyModel().to("cuda"), tp_mesh,
                           {"in_proj": ColwiseParallel(), "out_proj": RowwiseParallel()})
optimizer = torch.optim.AdamW(model.parameters(), lr=0.25, foreach=True)
for i in range(10):
    torch.manual_seed(i)
    loss = model(torch.rand(20, 10, device="cuda")).sum()
    loss.backward()
    optimizer.step()
