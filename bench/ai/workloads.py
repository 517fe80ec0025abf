"""The datasets bench/ai/run feeds to DataLoader (a module of their own: spawn and
forkserver workers import them by name). Each yields one uint8 tensor per sample."""
import os

import torch
import torch.utils.data


def as_tensor(reader):
    """An s3rdma.torch sample as a tensor on its registered memory, no copy."""
    return torch.frombuffer(reader.getbuffer(), dtype=torch.uint8)


class Boto3Samples(torch.utils.data.Dataset):
    """boto3 get_object per sample, one boto3 client per worker process."""

    def __init__(self, endpoint, ak, sk, region, bucket, keys):
        self.args = (endpoint, ak, sk, region)
        self.bucket, self.keys = bucket, keys
        self.client = None

    def __len__(self):
        return len(self.keys)

    def __getstate__(self):
        return dict(self.__dict__, client=None)

    def __getitem__(self, i):
        if self.client is None:
            import boto3
            import botocore.config
            endpoint, ak, sk, region = self.args
            self.client = boto3.session.Session().client(
                "s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                region_name=region, config=botocore.config.Config(
                    signature_version="s3v4", s3={"addressing_style": "path"}))
        body = self.client.get_object(Bucket=self.bucket, Key=self.keys[i])["Body"].read()
        return torch.frombuffer(bytearray(body), dtype=torch.uint8)


class FileSamples(torch.utils.data.Dataset):
    """Local files (page cache), read straight into the sample's tensor."""

    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb", buffering=0) as f:
            t = torch.empty(os.fstat(f.fileno()).st_size, dtype=torch.uint8)
            f.readinto(t.numpy())
        return t
