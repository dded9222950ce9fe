import argparse
import lightning as L
from lightning.pytorch.strategies import DDPStrategy
from mnist_model import LitMNIST, mnist_loaders

p = argparse.ArgumentParser()
p.add_argument("--gpus", type=int, default=1)
p.add_argument("--nodes", type=int, default=1)
p.add_argument("--epochs", type=int, default=10)
args = p.parse_args()
train_loader, val_loader = mnist_loaders()
trainer = L.Trainer(devices=args.gpus, num_nodes=args.nodes, max_epochs=args.epochs,
                    accelerator="gpu", strategy=DDPStrategy())
trainer.fit(LitMNIST(), train_loader, val_loader)
