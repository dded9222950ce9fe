export NCCL_IB_HCA=mlx5
export NCCL_SOCKET_IFNAME=ib0
