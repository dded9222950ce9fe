cd $SCRATCH (or directory on scratch where you want this repo to reside)
git clone https://github.com/pytorch/examples.git
python3 examples/distributed/ddp-tutorial-series/single_gpu.py 50 10
