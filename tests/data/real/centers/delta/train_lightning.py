import lightning as L
from model import LitClassifier, make_datamodule

if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-epochs", type=int, default=30)
    a = p.parse_args()
    L.seed_everything(a.seed)
    trainer = L.Trainer(accelerator="gpu", devices=4, num_nodes=1, strategy="ddp", max_epochs=a.max_epochs)
    trainer.fit(LitClassifier(), datamodule=make_datamodule())
