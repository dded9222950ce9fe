"""GPT pretraining loop written with Lightning Fabric (FSDP); srun starts one process per GPU."""
import argparse

import torch
from lightning.fabric import Fabric
from lightning.fabric.strategies import FSDPStrategy

from model import GPT, GPTConfig


def main(args):
    strategy = FSDPStrategy(auto_wrap_policy={torch.nn.TransformerEncoderLayer}, state_dict_type="sharded")
    fabric = Fabric(accelerator="cuda", devices=args.devices, num_nodes=args.num_nodes, strategy=strategy, precision="bf16-mixed")
    fabric.launch()
    with fabric.init_module(empty_init=True):
        model = GPT(GPTConfig.from_name("pythia-410m"))
    model = fabric.setup(model)
    optimizer = fabric.setup_optimizers(torch.optim.AdamW(model.parameters(), lr=6e-4))
    for step in range(args.max_steps):
        loss = model.training_step(step)
        fabric.backward(loss)
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--num-nodes", type=int, default=1)
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=1000)
    main(p.parse_args())
