#!/usr/bin/env python
import lightning as L

trainer = L.Trainer(accelerator="gpu", devices=1, num_nodes=2, strategy="ddp")
