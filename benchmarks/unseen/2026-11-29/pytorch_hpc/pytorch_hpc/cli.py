from lightning.pytorch.cli import LightningCLI

def main():
    LightningCLI()
