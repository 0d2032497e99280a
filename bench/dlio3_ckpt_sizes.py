"""v3.0 DLIO's own checkpoint plan, rank by rank, without 256-1,024 processes.

Run with the DLIO venv's python (bench/train_dlio.py ckpt-plan does): for each rank of
--world, builds DLIO's ConfigArguments from the workload YAML (DLIO's LoadConfig), sets
that rank and world size, constructs DLIO's PyTorchCheckpointing (its tensors are
_SizePlaceholders at v3.0: nothing allocated) and calls its save_checkpoint with
save_state recording each file's name and byte count (DLIO's _compute_state_bytes, what
its streaming writer writes) instead of writing. Prints JSON: {rank: {file: bytes}}.
"""

import argparse
import json
import sys
import tempfile

import yaml
from dlio_benchmark.checkpointing import pytorch_checkpointing as ptc
from dlio_benchmark.utils import config as dlio_config
from dlio_benchmark.utils.utility import DLIOMPI


class OneRankComm:
    """The only collective BaseCheckpointing makes is an allreduce of sizes it logs."""

    def __init__(self, rank, size):
        self.rank, self.size = rank, size

    def allreduce(self, value):
        return value


def rank_files(workload, rank, world, folder):
    DLIOMPI.reset()
    mpi = DLIOMPI.get_instance()
    mpi.set_parent_values(rank, world)
    mpi.mpi_world = OneRankComm(rank, world)
    DLIOMPI.comm = lambda self: self.mpi_world
    dlio_config.ConfigArguments._ConfigArguments__instance = None
    args = dlio_config.ConfigArguments.get_instance()
    args.output_folder = folder
    dlio_config.LoadConfig(args, workload)
    args.my_rank, args.comm_size = rank, world
    args.checkpoint_folder = folder
    files = {}

    def record(self, suffix, state, fsync=False):
        files[suffix.split("/", 1)[1] + ".pt"] = ptc._compute_state_bytes(state)

    ptc.PyTorchCheckpointing.save_state = record
    ptc.PyTorchCheckpointing().save_checkpoint(1, 1)
    return files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("yaml", help="a DLIO workload file (model, parallelism, checkpoint)")
    ap.add_argument("--world", type=int, required=True)
    a = ap.parse_args()
    with open(a.yaml) as f:
        workload = yaml.safe_load(f)
    with tempfile.TemporaryDirectory(prefix="dlio3-ckpt-plan-") as folder:
        plan = {r: rank_files(workload, r, a.world, folder) for r in range(a.world)}
    json.dump(plan, sys.stdout)


if __name__ == "__main__":
    main()
