"""A trivial verification workload for the backend tests, quicker than the real mini-apps
(miniapps/): every rank joins a gloo process group and all-reduces its rank, and rank 0 prints the
result line in the real mini-apps' form.
Rank and world size come from torchrun's variables, else from MPI's (PMI_*), as under mpiexec;
with neither it is a single process, which needs no port."""

import json
import os
import socket

import torch
import torch.distributed as dist


def env_int(names: tuple[str, ...], default: int) -> int:
    return int(next((os.environ[n] for n in names if n in os.environ), default))


def main() -> None:
    rank = env_int(("RANK", "PMI_RANK"), 0)
    world_size = env_int(("WORLD_SIZE", "PMI_SIZE"), 1)
    if world_size == 1:
        # A world of one needs no rendezvous; a port would collide with the other single-process
        # tasks of the same job, which all run on this one machine.
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    else:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29500")
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
    value = torch.tensor([float(rank)])
    dist.all_reduce(value)
    seen = [None] * world_size
    # The Slurm node each rank ran on: all of them being "n1" would mean one node did all the work.
    dist.all_gather_object(seen, (rank, os.environ.get("SLURMD_NODENAME", socket.gethostname())))
    if rank == 0:
        result = {"ok": value.item() == world_size * (world_size - 1) / 2, "world_size": world_size,
                  "ranks_seen": sorted(r for r, _ in seen), "hostnames": sorted({h for _, h in seen})}
        print("MAPLE_MINIAPP_RESULT " + json.dumps(result), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
