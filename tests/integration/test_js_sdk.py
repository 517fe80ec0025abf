"""The AWS SDK for JavaScript v3 (@aws-sdk/client-s3, lib-storage and s3-request-presigner
3.967, the last for Node.js 18, Debian 12's; pinned in js/package-lock.json and installed from
npm into the build directory) against s3rdmad over HTTP, as an application uses it: its default
checksums on every PUT and their validation on every GET, ranged GETs, streams, multipart
through lib-storage and by hand, presigned URLs, conditional requests, configurations,
versioning (js/sdk_check.mjs)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from s3r_itest import BINARY, USERS, new_bucket_name

JS = Path(__file__).parent / "js"
BUILD = Path(os.environ.get("S3RDMA_BUILD") or Path(BINARY).parent).resolve()


@pytest.fixture(scope="module")
def sdk_dir():
    """The pinned SDK in BUILD/js-sdk, installed again when the lock file changed."""
    for tool in ("node", "npm"):
        assert shutil.which(tool), f"{tool} is missing: scripts/install-deps installs it"
    d = BUILD / "js-sdk"
    d.mkdir(exist_ok=True)
    lock = (JS / "package-lock.json").read_bytes()
    if not (d / "node_modules").is_dir() or (d / "package-lock.json").read_bytes() != lock:
        for name in ("package.json", "package-lock.json"):
            shutil.copy(JS / name, d / name)
        p = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=d,
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"npm ci failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    shutil.copy(JS / "sdk_check.mjs", d / "sdk_check.mjs")
    return d


def test_aws_sdk_js_v3(server, sdk_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(S3_ENDPOINT=server.endpoint, AWS_ACCESS_KEY_ID=USERS[0][0],
               AWS_SECRET_ACCESS_KEY=USERS[0][1], BUCKET=new_bucket_name("js"),
               NODE_NO_WARNINGS="1")
    p = subprocess.run(["node", "sdk_check.mjs"], cwd=sdk_dir, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, f"{p.stdout}\n{p.stderr[-3000:]}"
