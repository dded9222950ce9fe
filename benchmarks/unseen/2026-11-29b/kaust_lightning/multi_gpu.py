import pytorch_lightning as pl

trainer = pl.Trainer(accelerator="gpu", strategy="ddp")
