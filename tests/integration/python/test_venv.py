"""The package as a user gets it: `pip install ./python` into a clean venv (done by
conftest.py), then imported and used by that venv's own interpreter."""
import subprocess

from conftest import USERS

SCRIPT = """
import sys, numpy as np, s3rdma, fsspec
ep, rep, bucket = sys.argv[1:4]
with s3rdma.RDMAClient(endpoint=rep, http_endpoint=ep, transport="native") as c:
    c.put_object_numpy(bucket, "venv.npy", np.arange(12).reshape(3, 4))
    a = c.get_object_numpy(bucket, "venv.npy")
    assert a.sum() == 66, a
    assert c.stats()["native_ops"] == 2  # the PUT; one GET brings header and data
fs = fsspec.filesystem("s3rdma", endpoint=ep, rdma_endpoint=rep)
assert fs.cat_file(bucket + "/venv.npy", start=0, end=6) == b"\\x93NUMPY"
print("OK", s3rdma.__file__)
"""


def test_installed_package_works(venv, rsrv, rbucket):
    env = rsrv.client_env()
    env.update(AWS_ACCESS_KEY_ID=USERS[0][0], AWS_SECRET_ACCESS_KEY=USERS[0][1])
    p = subprocess.run([str(venv / "bin" / "python"), "-c", SCRIPT, rsrv.endpoint,
                        rsrv.rdma_endpoint, rbucket], env=env, capture_output=True, text=True,
                       cwd="/", timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("OK ") and str(venv) in p.stdout
