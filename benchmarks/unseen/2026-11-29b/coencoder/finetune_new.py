from transformers import Trainer, TrainingArguments
