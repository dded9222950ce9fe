export PYTHONPATH=./huggingface_model:$PYTHONPATH
export GPU_NUMS=8

torchrun --nnodes=1 --nproc_per_node=8 --master_port=22502 ./examples/qwen2/train.py --config ./examples/qwen2/config.py --launcher "torch"
