from mpi4py import MPI
import tensorflow as tf

comm = MPI.COMM_WORLD
print(comm.Get_rank(), comm.Get_size(), tf.__version__)
