"""One rank of a simulated 2-rank job for test_torch.py (run as a program, as torchrun
would run it): joins a gloo group from RANK/WORLD_SIZE and a file store, then
runs two epochs of each dataset through a DataLoader whose 2 workers start by the
method given, and prints one JSON line: per dataset, per epoch, [key, sha256 of the
sample's bytes] for every sample this rank saw.

    torch_rank.py START_METHOD PREFIX_URI   (store and connection settings in S3R_TEST_*)

The main process lists the map dataset (its client exists before the workers start,
which is what a fork start inherits).
"""
import hashlib
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.utils.data
from s3rdma.torch import S3ClientConfig, S3IterableDataset, S3MapDataset


def sample(reader):
    """key and digest of the sample's bytes, read from registered memory as a tensor
    without a copy (the zero-copy hand-off under test)."""
    data = torch.frombuffer(reader.getbuffer(), dtype=torch.uint8) if reader.size else \
        torch.empty(0, dtype=torch.uint8)
    return reader.key, hashlib.sha256(data.numpy().tobytes()).hexdigest()


def collate(batch):
    return batch


def epochs(dataset, method, sampler=None):
    loader = torch.utils.data.DataLoader(dataset, batch_size=4, num_workers=2,
                                         multiprocessing_context=method, sampler=sampler,
                                         collate_fn=collate, persistent_workers=True)
    out = []
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        out.append([list(s) for batch in loader for s in batch])
    return out


def main():
    method, uri = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo", init_method="file://" + os.environ["S3R_TEST_STORE"],
                            rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
    cfg = S3ClientConfig(transport="native", rdma_endpoint=os.environ["S3R_TEST_RDMA"],
                         access_key=os.environ["S3R_TEST_AK"],
                         secret_key=os.environ["S3R_TEST_SK"],
                         # spawn and forkserver workers must get native sessions; a
                         # forked worker cannot run UCX (docs/client.md, Fork) and goes
                         # over HTTP
                         options={"fallback": method == "fork"})
    endpoint = os.environ["S3R_TEST_ENDPOINT"]
    mapped = S3MapDataset.from_prefix(uri, endpoint=endpoint, s3client_config=cfg,
                                      transform=sample)
    len(mapped)  # lists now, in this process
    sampler = torch.utils.data.distributed.DistributedSampler(mapped, shuffle=True)
    iterable = S3IterableDataset.from_prefix(uri, endpoint=endpoint, s3client_config=cfg,
                                             transform=sample, enable_sharding=True,
                                             prefetch=5)
    result = {"map": epochs(mapped, method, sampler), "iterable": epochs(iterable, method)}
    dist.destroy_process_group()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
