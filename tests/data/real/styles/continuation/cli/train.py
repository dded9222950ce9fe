import deepspeed
