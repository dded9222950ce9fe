"""Supervised fine-tuning with TRL's SFTTrainer (stub for the corpus: the real script parses the YAML recipe)."""
import sys

from alignment import H4ArgumentParser, ModelArguments, DataArguments, SFTConfig
from trl import SFTTrainer


def main():
    parser = H4ArgumentParser((ModelArguments, DataArguments, SFTConfig))
    model_args, data_args, training_args = parser.parse()
    SFTTrainer(model=model_args.model_name_or_path, args=training_args).train()


if __name__ == "__main__":
    main()
