"""LightningCLI entry point: `python main.py fit --config configs/segformer.yaml`."""
from lightning.pytorch.cli import LightningCLI

from seg.data import ADE20KDataModule
from seg.model import SegFormerModule

if __name__ == "__main__":
    LightningCLI(SegFormerModule, ADE20KDataModule)
