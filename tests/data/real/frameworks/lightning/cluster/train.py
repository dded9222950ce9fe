"""ImageNet classifier trained with the Lightning Trainer (one process per GPU, started by srun)."""
import argparse

import lightning as L
import torch
import torchvision


class Classifier(L.LightningModule):
    def __init__(self, lr: float = 0.1):
        super().__init__()
        self.model = torchvision.models.resnet50()
        self.lr = lr

    def training_step(self, batch, batch_idx):
        images, target = batch
        loss = torch.nn.functional.cross_entropy(self.model(images), target)
        self.log("train_loss", loss, sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--max_epochs", type=int, default=90)
    parser.add_argument("--data_dir", default="/datasets/imagenet")
    args = parser.parse_args()
    trainer = L.Trainer(accelerator="gpu", devices=8, num_nodes=4, strategy="ddp", max_epochs=args.max_epochs)
    data = torchvision.datasets.ImageFolder(args.data_dir + "/train", transform=torchvision.transforms.ToTensor())
    trainer.fit(Classifier(), torch.utils.data.DataLoader(data, batch_size=64, num_workers=8))
