"""Sharding work over the processes of a ``torchrun`` launch (torch.distributed): a corpus's lines
(:mod:`.corpus`) and evaluation units (:mod:`infill.evaluation`).

Under ``torchrun --nproc-per-node N -m infill eval ...`` (or ``... sample -f FILE --out OUT``) each process is
one rank: gloo on CPU, NCCL on GPU (rank ``r`` on ``cuda:LOCAL_RANK``). Every rank reads the same input; the work
is dealt out in rounds, and after each round rank 0 gathers what was done and stores it, so a killed run resumes
from its last round. What a unit draws depends only on itself, so the output equals the single-process one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional

import torch.distributed as dist


@dataclass(frozen=True)
class World:
    """This process's ``rank`` among ``size`` processes (``size == 1``: no torch.distributed)."""

    rank: int = 0
    size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def gather(self, obj: Any) -> Optional[list]:
        """Every rank's ``obj`` on rank 0 (in rank order), None elsewhere."""
        if self.size == 1:
            return [obj]
        gathered = [None] * self.size if self.is_main else None
        dist.gather_object(obj, gathered, dst=0)
        return gathered

    def all_gather(self, obj: Any) -> list:
        """Every rank's ``obj`` on every rank (in rank order)."""
        if self.size == 1:
            return [obj]
        gathered = [None] * self.size
        dist.all_gather_object(gathered, obj)
        return gathered

    def broadcast(self, obj: Any) -> Any:
        """Rank 0's ``obj`` on every rank."""
        if self.size == 1:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]


def init_world(device: str) -> tuple[World, str]:
    """Join the process group that ``torchrun`` describes in the environment, if any; returns the world
    and this rank's device (``cuda`` becomes ``cuda:LOCAL_RANK``)."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size == 1:
        return World(), device
    on_gpu = device.startswith("cuda")
    if on_gpu:
        import torch

        device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if on_gpu else "gloo")
    return World(dist.get_rank(), dist.get_world_size()), device


def close_world(world: World) -> None:
    if world.size > 1 and dist.is_initialized():
        dist.destroy_process_group()
