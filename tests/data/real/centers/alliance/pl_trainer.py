import pytorch_lightning as pl
from torchvision.datasets import CIFAR10
from net import Net, loaders

if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--batch_size", type=int, default=256)
    p.add_argument("--max_epochs", type=int, default=5)
    a = p.parse_args()
    trainer = pl.Trainer(accelerator="gpu", devices=4, num_nodes=2, strategy="ddp", max_epochs=a.max_epochs)
    trainer.fit(Net(), *loaders(a.batch_size))
