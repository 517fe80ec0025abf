"""build/s3rdma-bench against a real s3rdmad with its RDMA session port.

Each verb runs briefly (--ops) over http, token and native, and its --json is checked: ops
done, latencies ordered, every read verified, the data-path counts those of the transport
asked for, no errors. An object overwritten behind the tool's back must fail verification;
`verify` passes against this server and fails, with a remedy, against a closed port. The
RDMA transports run under UCX's default transports and UCX_TLS=tcp.
"""
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from s3r_itest import REPO_ROOT, UCX_ENVS, USERS, RdmaServer, boto_client, clean_env, free_port

BUILD = Path(os.environ.get("S3RDMA_BUILD", REPO_ROOT / "build"))
BENCH = BUILD / "s3rdma-bench"
AK, SK = USERS[0]
LATENCIES = ("min", "p50", "p90", "p99", "p999", "max")


@pytest.fixture(scope="module", params=list(UCX_ENVS))
def rsrv(request, tmp_path_factory):
    if not BENCH.exists():
        pytest.fail(f"{BENCH} not built: run make")
    s = RdmaServer(tmp_path_factory.mktemp("bench"), "bench", UCX_ENVS[request.param]).start()
    yield s
    s.stop()


def bench(srv, *args, tmp=None, env=None, check=True, endpoint=None):
    """Runs s3rdma-bench against srv; returns (returncode, JSON or None, stdout, stderr)."""
    out = Path(tmp) / f"{uuid.uuid4().hex}.json" if tmp else None
    cmd = [str(BENCH), *map(str, args), "--endpoints", endpoint or srv.srv.host,
           "--rdma-endpoint", srv.rdma_endpoint, "--access-key", AK, "--secret-key", SK]
    if out:
        cmd += ["--json", str(out)]
    p = subprocess.run(cmd, env=clean_env({**srv.ucx_env, **(env or {})}), capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL)
    if check:
        assert p.returncode == 0, f"{' '.join(cmd)} -> {p.returncode}\n{p.stdout}\n{p.stderr}"
    js = json.loads(out.read_text()) if out and out.exists() else None
    return p.returncode, js, p.stdout, p.stderr


def check_op(js, name, transport):
    """The checks every successful run's operation must pass."""
    op = js["operations"][name]
    assert op["ops"] > 0 and op["errors"] == 0, op
    assert op["errors_by_kind"] == {}, op
    lat = [op["latency_us"][k] for k in LATENCIES]
    assert lat == sorted(lat) and lat[0] > 0, lat
    if name == "read":
        assert op["verified_reads"] == op["ops"], op
    assert op["fallback"] == 0 and op["declined"] == 0, op
    # Object GETs and PUTs travel by the transport asked for; a DELETE, LIST or HEAD has
    # no token form, so under "token" it goes over HTTP.
    by_rdma = transport == "native" or (transport == "token" and name in ("read", "write"))
    if by_rdma:
        assert op["rdma"] == op["ops"] and op["http"] == 0, op
        assert op[transport] == op["ops"], op
    else:
        assert op["rdma"] == 0 and op["http"] == op["ops"], op
    return op


@pytest.mark.parametrize("transport", ["http", "token", "native"])
def test_every_verb(rsrv, transport, tmp_path):
    if transport == "http" and rsrv.ucx_env:
        pytest.skip("HTTP does not depend on UCX's transports")
    b = f"bench-{transport}-{uuid.uuid4().hex[:8]}"
    common = ["--bucket", b, "--transport", transport, "--object-size", "4KB-64KB",
              "--threads", "2", "--seed-objects", "20"]
    inflight = ["--inflight", "8"] if transport == "native" else []

    _, js, out, _ = bench(rsrv, "run", "write", "--ops", 100, *common, *inflight, tmp=tmp_path)
    op = check_op(js, "write", transport)
    assert op["ops"] == 100 and op["bytes"] >= 100 * 4096
    assert js["config"]["transport"] == transport and js["workload"] == "write"
    assert "write" in out and "latency us" in out

    _, js, out, _ = bench(rsrv, "run", "read", "--ops", 200, *common, *inflight, tmp=tmp_path)
    op = check_op(js, "read", transport)
    assert op["ops"] == 200 and "ttfb_us" in op
    assert "verified 200/200" in out

    _, js, _, _ = bench(rsrv, "run", "mixed", "--ops", 200, "--mix", "read=50,write=40,list=10",
                        *common, *inflight, tmp=tmp_path)
    for name in ("read", "write", "list"):
        check_op(js, name, transport)
    assert sum(js["operations"][n]["ops"] for n in ("read", "write", "list")) == 200

    _, js, _, _ = bench(rsrv, "run", "list", "--ops", 20, *common, tmp=tmp_path)
    check_op(js, "list", transport)

    _, js, _, _ = bench(rsrv, "run", "head", "--ops", 50, *common, tmp=tmp_path)
    check_op(js, "head", transport)

    _, js, _, _ = bench(rsrv, "run", "delete", "--ops", 100, *common, tmp=tmp_path)
    op = check_op(js, "delete", transport)
    assert op["ops"] == 20  # each of the 20 seeded keys once, then the run ends
    keys = boto_client(rsrv).list_objects_v2(Bucket=b).get("KeyCount")
    assert keys == 0


@pytest.mark.parametrize("transport", ["http", "native"])
def test_walk(rsrv, transport, tmp_path):
    """run walk writes its keys in parallel, then lists every one in order, page by page;
    with --seed-objects 0 it walks what is there."""
    if transport == "http" and rsrv.ucx_env:
        pytest.skip("HTTP does not depend on UCX's transports")
    b = f"walk-{transport}-{uuid.uuid4().hex[:8]}"
    common = ["--bucket", b, "--prefix", "w/", "--object-size", "64", "--transport", transport]
    _, js, out, _ = bench(rsrv, "run", "walk", "--seed-objects", 2345, "--threads", 8, *common,
                          tmp=tmp_path)
    assert js["seed"]["objects"] == 2345 and js["workload"] == "walk", js
    w = js["walk"]
    assert w["keys"] == 2345 and w["pages"] == 3 and w["sorted"], w
    assert 0 < w["page_ms"]["p50"] <= w["page_ms"]["p99"] <= w["page_ms"]["max"], w
    assert w[transport] == 3 and w["http" if transport == "native" else "native"] == 0, w
    assert "keys in order: yes" in out
    _, js, _, _ = bench(rsrv, "run", "walk", "--seed-objects", 0, *common, tmp=tmp_path)
    assert js["seed"]["objects"] == 0 and js["walk"]["keys"] == 2345, js
    assert boto_client(rsrv).list_objects_v2(Bucket=b, Prefix="w/")["KeyCount"] == 1000


def test_warmup_and_gap(rsrv, tmp_path):
    """Reads started in the warm-up are checked but not counted; a gap keeps the run to
    one request at a time per thread, reads not checksummed with --verify=false."""
    b = f"warm-{uuid.uuid4().hex[:8]}"
    common = ["--bucket", b, "--object-size", "4KB", "--transport", "native",
              "--seed-objects", 4, "--threads", 2]
    _, js, out, _ = bench(rsrv, "run", "read", "--warmup", "200ms", "--duration", "300ms",
                          *common, tmp=tmp_path)
    op = js["operations"]["read"]
    assert op["ops"] > 0 and op["errors"] == 0 and op["verified_reads"] == op["ops"], op
    # the counters start with the counted phase: at most the requests then in flight
    # (one per thread) were started before it and answered after it
    assert 0 <= op["native"] - op["ops"] <= 2 and op["http"] == 0, op
    assert js["config"]["warmup_s"] == 0.2 and "after 0.200 s of warm-up" in out
    _, js, _, _ = bench(rsrv, "run", "read", "--gap", "100us", "--duration", "300ms",
                        "--verify=false", *common, tmp=tmp_path)
    op = js["operations"]["read"]
    assert op["ops"] > 0 and op["errors"] == 0 and op["verified_reads"] == 0, op
    assert js["config"]["gap_s"] == 0.0001 and js["config"]["verify"] is False


def test_corrupted_object_fails_verification(rsrv, tmp_path):
    b = f"bench-bad-{uuid.uuid4().hex[:8]}"
    common = ["--bucket", b, "--object-size", "4KB", "--threads", "1", "--transport", "native"]
    bench(rsrv, "run", "write", "--ops", 4, "--seed-objects", 4, *common, tmp=tmp_path)
    s3 = boto_client(rsrv)
    # key 1: one byte of the body flipped, header intact; key 2: other bytes altogether
    k1, k2 = "s3rdma-bench/obj-00000001", "s3rdma-bench/obj-00000002"
    body = bytearray(s3.get_object(Bucket=b, Key=k1)["Body"].read())
    body[1000] ^= 0x01
    s3.put_object(Bucket=b, Key=k1, Body=bytes(body))
    s3.put_object(Bucket=b, Key=k2, Body=b"x" * 4096)
    # --seed-objects 0: read what is there, without writing it again
    rc, js, _, err = bench(rsrv, "run", "read", "--ops", 40, "--seed-objects", 0, *common,
                           tmp=tmp_path, check=False)
    assert rc == 1, err
    op = js["operations"]["read"]
    kinds = op["errors_by_kind"]
    assert kinds.get("verify_checksum") == 10 and kinds.get("verify_bad_header") == 10, kinds
    assert op["errors"] == 20 and op["ops"] == 20 and op["verified_reads"] == 20, op
    assert "not what was written" in err


def test_spt_env_override(rsrv, tmp_path):
    """SPT_RDMA_ENABLED=false turns --use-rdma off: everything over HTTP."""
    b = f"bench-env-{uuid.uuid4().hex[:8]}"
    _, js, _, _ = bench(rsrv, "run", "read", "--use-rdma", "--ops", 20, "--bucket", b,
                        "--object-size", "4KB", "--seed-objects", 4, tmp=tmp_path,
                        env={"SPT_RDMA_ENABLED": "false"})
    assert js["config"]["transport"] == "http" and not js["config"]["use_rdma"]
    check_op(js, "read", "http")


def test_verify_passes(rsrv):
    _, _, out, _ = bench(rsrv, "verify", "--use-rdma", "--bucket", "bench-verify")
    assert "FAIL" not in out, out
    assert "credentials accepted" in out and "RDMA round trip" in out and "UCX 1." in out, out
    for line in out.splitlines():
        if line.startswith("WARN"):
            assert "remedy:" in out.split(line, 1)[1].splitlines()[1], out


def test_verify_fails_closed_port(rsrv):
    rc, _, out, _ = bench(rsrv, "verify", endpoint=f"127.0.0.1:{free_port()}", check=False)
    assert rc == 1, out
    assert "FAIL" in out and "HTTP not reachable" in out and "remedy: start s3rdmad" in out, out


def test_verify_fails_bad_credentials(rsrv):
    p = subprocess.run([str(BENCH), "verify", "--endpoints", rsrv.srv.host, "--access-key",
                        "AKNOBODY", "--secret-key", "wrong-secret"], env=clean_env(rsrv.ucx_env),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "credentials refused" in p.stdout and "remedy:" in p.stdout, \
        p.stdout


def _no_aws_env(extra):
    """clean_env without the caller's AWS keys and profile, plus extra."""
    env = {k: v for k, v in clean_env(extra).items()
           if not k.startswith(("AWS_ACCESS_KEY", "AWS_SECRET", "AWS_SESSION", "AWS_PROFILE",
                                "AWS_CONTAINER"))}
    env.update(extra)
    return env


def test_keys_from_the_aws_profile(rsrv, tmp_path):
    """Without --access-key/--secret-key or their variables, the keys are the AWS
    profile's, as the AWS CLI finds them; with none anywhere, a clear error."""
    creds = tmp_path / "credentials"
    creds.write_text(f"[default]\naws_access_key_id = AKNOBODY\naws_secret_access_key = x\n"
                     f"[bench]\naws_access_key_id = {AK}\naws_secret_access_key = {SK}\n")
    files = {"AWS_SHARED_CREDENTIALS_FILE": str(creds),
             "AWS_CONFIG_FILE": str(tmp_path / "no-config"), "HOME": str(tmp_path)}
    out = tmp_path / "r.json"
    b = f"bench-prof-{uuid.uuid4().hex[:8]}"
    cmd = [str(BENCH), "run", "read", "--ops", "10", "--object-size", "4KB", "--seed-objects",
           "2", "--bucket", b, "--endpoints", rsrv.srv.host, "--json", str(out)]
    p = subprocess.run(cmd, env=_no_aws_env({**rsrv.ucx_env, **files, "AWS_PROFILE": "bench"}),
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    check_op(json.loads(out.read_text()), "read", "http")
    # The default profile's keys are the server's to refuse.
    p = subprocess.run(cmd, env=_no_aws_env({**rsrv.ucx_env, **files}), capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode != 0 and "InvalidAccessKeyId" in p.stderr, p.stderr
    p = subprocess.run(cmd, env=_no_aws_env({"AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
                                             "AWS_CONFIG_FILE": str(tmp_path / "none"),
                                             "HOME": str(tmp_path)}),
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode != 0 and "credentials" in p.stderr.lower(), p.stderr


@pytest.mark.parametrize("args,msg", [
    (["run"], "run needs one of"),
    (["run", "write", "--object-size", "12XB"], "expected a size"),
    (["run", "write", "--object-size", "1MB-4KB"], "low end is above"),
    (["run", "write", "--object-size", "16"], "at least 64 bytes"),
    (["run", "write", "--duration", "5 minutes"], "expected a duration"),
    (["run", "mixed", "--mix", "read=70,delete=30"], "expected weights"),
    (["run", "read", "--mix", "read=1"], "--mix applies to 'run mixed' only"),
    (["run", "read", "--inflight", "65"], "from 1 to 64"),
    (["run", "read", "--transport", "carrier-pigeon"], "expected http, token, native"),
    (["run", "read", "--rdma-fallback=maybe"], "expected true or false"),
    (["run", "read", "--no-such-flag"], "unknown flag"),
    (["walk"], "unknown verb"),
    (["run", "read", "--gap", "1ms", "--inflight", "2"], "--gap models one request"),
    (["run", "read", "--warmup", "soon"], "expected a duration"),
])
def test_bad_arguments(args, msg):
    p = subprocess.run([str(BENCH), *args, "--access-key", AK, "--secret-key", SK],
                       env=clean_env(), capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and msg in p.stderr, (p.returncode, p.stderr)
