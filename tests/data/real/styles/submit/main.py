import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--config")
parser.add_argument("--ni", action="store_true")
args = parser.parse_args()
device = torch.device("cuda")
