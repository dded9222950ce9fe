import argparse
import lightning as L
p = argparse.ArgumentParser(); p.add_argument("--strategy"); p.add_argument("--model")
a, _ = p.parse_known_args()
trainer = L.Trainer(devices=4, strategy=a.strategy)
