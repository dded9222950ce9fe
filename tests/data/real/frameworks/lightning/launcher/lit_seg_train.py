"""Segmentation fine-tuning with the Lightning Trainer; under Slurm every srun task is one GPU rank."""
import lightning as L
from lightning.pytorch.cli import LightningCLI

from seg.data import ADE20KDataModule
from seg.model import SegFormerModule


def main():
    LightningCLI(SegFormerModule, ADE20KDataModule, trainer_defaults={"strategy": "ddp", "devices": 8, "num_nodes": 2})


if __name__ == "__main__":
    L.seed_everything(1234)
    main()
