cd $SCRATCH
git clone https://github.com/pytorch/examples.git
torchrun --nproc_per_node=3 examples/distributed/ddp-tutorial-series/multigpu_torchrun.py 50 10
