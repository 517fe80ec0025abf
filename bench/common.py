"""Shared helpers for the bench/ scripts (standard library only).

SigV4 presigning (query form), free ports, starting s3rdmad, medians, ucx_perftest.
Written for these benchmarks; not used by the server or the tests.
"""
import datetime
import hashlib
import hmac
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
AK = "BENCHAK0000000000000"
SK = "bench-secret-key-0000000000000000000000"
REGION = "us-east-1"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def _q(s, safe="-_.~"):
    return urllib.parse.quote(s, safe=safe)


def presign(method, host, path, expires=604800, ak=AK, sk=SK, region=REGION, query=None):
    """Returns 'PATH?QUERY' presigned with SigV4 (UNSIGNED-PAYLOAD, host signed); query: more
    parameters (a dict, "" for a bare name such as versioning)."""
    t = datetime.datetime.now(datetime.timezone.utc)
    amzdate = t.strftime("%Y%m%dT%H%M%SZ")
    day = t.strftime("%Y%m%d")
    scope = f"{day}/{region}/s3/aws4_request"
    q = {
        "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
        "X-Amz-Credential": f"{ak}/{scope}",
        "X-Amz-Date": amzdate,
        "X-Amz-Expires": str(expires),
        "X-Amz-SignedHeaders": "host",
        **(query or {}),
    }
    cq = "&".join(f"{_q(k)}={_q(v)}" for k, v in sorted(q.items()))
    cpath = _q(path, safe="/-_.~")
    creq = "\n".join([method, cpath, cq, f"host:{host}\n", "host", "UNSIGNED-PAYLOAD"])
    sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])

    def h(key, msg):
        return hmac.new(key, msg.encode(), hashlib.sha256).digest()

    k = h(h(h(h(("AWS4" + sk).encode(), day), region), "s3"), "aws4_request")
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    return f"{cpath}?{cq}&X-Amz-Signature={sig}"


def http_req(port, method, uri, body=b"", cafile=None):
    """One request to 127.0.0.1:port; HTTPS verified against cafile when given."""
    if cafile:
        ctx = ssl.create_default_context(cafile=cafile)
        c = http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=ctx)
    else:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, uri, body=body, headers={"Content-Length": str(len(body))})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


class S3rdmad:
    """s3rdmad on a free port, relaxed durability (unless told), temp data dir."""

    def __init__(self, tmp, env=None, rdma=True, durability="relaxed", tls=None, extra_args=(),
                 binary=None, data=None):
        """tls: (cert, key) paths: also HTTPS on self.tls_port. extra_args: more flags.
        binary: another s3rdmad (default: this tree's build/s3rdmad). data: the data
        directory (default: a new one under tmp)."""
        self.port = free_port()
        self.rport = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.data = data or os.path.join(tmp, f"s3data-{self.port}")
        os.makedirs(self.data, exist_ok=True)
        cfg = os.path.join(tmp, f"s3rdmad-{self.port}.yaml")
        with open(cfg, "w") as f:
            f.write(f"users:\n  - access_key: {AK}\n    secret_key: {SK}\n")
        self.log = open(os.path.join(tmp, f"s3rdmad-{self.port}.log"), "w")
        args = [binary or os.path.join(ROOT, "build", "s3rdmad"), "--data", self.data,
                "--listen", self.host, "--config", cfg, "--durability", durability,
                "--log-level", "warn"]
        self.tls_port = free_port() if tls else None
        if tls:
            args += ["--tls-cert", tls[0], "--tls-key", tls[1],
                     "--tls-listen", f"127.0.0.1:{self.tls_port}"]
        if rdma:
            args += ["--rdma-listen", f"127.0.0.1:{self.rport}"]
        else:
            args += ["--rdma-enabled", "false"]
        args += list(extra_args)
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=env or os.environ.copy())
        wait_port(self.port, self.proc, "s3rdmad")
        if tls:
            wait_port(self.tls_port, self.proc, "s3rdmad (https)")
        if rdma:
            wait_port(self.rport, self.proc, "s3rdmad (rdma)")

    def put(self, path, body):
        st, data = http_req(self.port, "PUT", presign("PUT", self.host, path), body)
        if st != 200:
            raise SystemExit(f"PUT {path}: {st} {data[:300]!r}")

    def stop(self):
        stop_proc(self.proc)
        self.log.close()


def wait_port(port, proc, name, timeout=15):
    t = time.time() + timeout
    while time.time() < t:
        if proc.poll() is not None:
            raise SystemExit(f"{name} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{name} did not listen on {port}")


def stop_proc(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(12)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def gcc(src, out, extra=()):
    cmd = ["gcc", "-O2", "-g", "-Wall", "-std=c11", "-pthread", "-o", out, src, *extra]
    subprocess.run(cmd, check=True)
    return out


BENCH_TOOL = os.path.join(ROOT, "build", "s3rdma-bench")


def bench_tool(srv, workload, transport="http", size=4096, threads=1, secs=1.0, warmup=0.3,
               inflight=1, bucket="bench", prefix="bench/", seed=None, verify=True, extra=(),
               env=None, tool=None, timeout=None):
    """One s3rdma-bench run (docs/bench-tool.md) against srv (an S3rdmad, or anything with
    .host and .rport): `run WORKLOAD` for secs after warmup, reading its --json. seed: the
    key space (--seed-objects; default: one key per thread for a write, else 1); 0 takes
    the objects already under prefix. verify=False: reads are not checksummed (as the old
    bench/s3r_loadgen.c measured). tool: another tree's build/s3rdma-bench.
    Returns (figures, note): figures flattens the workload's operation (ops, errors, ops_s,
    MBps, p50_us, p90_us, p99_us, max_us, http_ops, token_ops, native_ops, fallbacks, secs,
    cpu_s) or the walk (keys, pages, secs, keys_s, page_p50_ms, page_p99_ms, page_max_ms,
    native_ops, http_ops, sorted, seeded, seed_secs), or is None; note says what went wrong
    ("" when nothing did)."""
    fd, out = tempfile.mkstemp(prefix="s3rbench-", suffix=".json")
    os.close(fd)
    if seed is None:
        seed = threads if workload == "write" else 1
    cmd = [tool or BENCH_TOOL, "run", workload, "--endpoints", srv.host, "--access-key", AK,
           "--secret-key", SK, "--bucket", bucket, "--prefix", prefix, "--transport", transport,
           "--object-size", str(size), "--threads", str(threads), "--inflight", str(inflight),
           "--duration", f"{secs:g}s", "--warmup", f"{warmup:g}s", "--seed-objects", str(seed),
           "--json", out, *map(str, extra)]
    if not verify:
        cmd.append("--verify=false")
    if getattr(srv, "rport", None):
        cmd += ["--rdma-endpoint", f"127.0.0.1:{srv.rport}"]
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                           timeout=timeout or (secs + warmup) * 10 + 120)
        try:
            with open(out) as f:
                js = json.load(f)
        except (OSError, ValueError):
            return None, f"rc={p.returncode} {p.stderr.strip()[:400]}"
    finally:
        os.unlink(out)
    note = f"rc={p.returncode} {p.stderr.strip()[:300]}" if p.returncode else ""
    if workload == "walk":
        w = js["walk"]
        return {"keys": w["keys"], "pages": w["pages"], "secs": w["secs"],
                "keys_s": w["keys_per_s"], "page_p50_ms": w["page_ms"]["p50"],
                "page_p99_ms": w["page_ms"]["p99"], "page_max_ms": w["page_ms"]["max"],
                "native_ops": w["native"], "http_ops": w["http"], "sorted": w["sorted"],
                "seeded": js["seed"]["objects"], "seed_secs": js["seed"]["secs"]}, note
    o = js["operations"][workload]
    lat = o["latency_us"]
    return {"ops": o["ops"], "errors": o["errors"], "ops_s": o["ops_per_s"],
            "MBps": o["mb_per_s"], "p50_us": lat["p50"], "p90_us": lat["p90"],
            "p99_us": lat["p99"], "max_us": lat["max"], "http_ops": o["http"],
            "token_ops": o["token"], "native_ops": o["native"], "fallbacks": o["fallback"],
            "secs": js["elapsed_s"], "cpu_s": js["cpu"]["user_s"] + js["cpu"]["sys_s"]}, note


def build_httpload(tmp):
    """Compiles bench/httpload.c (it speaks TLS through GnuTLS) into tmp; its path."""
    return gcc(os.path.join(BENCH, "httpload.c"), os.path.join(tmp, "httpload"),
               extra=["-lgnutls"])


def kv(line):
    return {k: float(v) for k, v in (x.split("=", 1) for x in line.split())}


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def machine():
    u = os.uname()
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"nproc={os.cpu_count()} kernel={u.release} cpu={cpu}"


def cpu_s(pid):
    """User + system CPU seconds of process pid so far, every thread (/proc/PID/stat fields
    14 and 15, counted after the ')' that closes the command name)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def mktemp():
    return tempfile.mkdtemp(prefix="s3rbench-")


def rmtree(d):
    shutil.rmtree(d, ignore_errors=True)


def perftest(env, test, size, iters, warm, rank=50.0):
    """An ucx_perftest server+client pair; the -f line's fields."""
    port = free_port()
    srv = subprocess.Popen(["ucx_perftest", "-p", str(port)], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        cmd = ["ucx_perftest", "127.0.0.1", "-p", str(port), *test.split(), "-s", str(size),
               "-n", str(iters), "-w", str(warm), "-f", "-R", str(rank)]
        for _ in range(20):
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
            if out.returncode == 0:
                break
            time.sleep(0.2)
        else:
            return None
        nums = [ln.split() for ln in out.stdout.splitlines()
                if ln.strip() and ln.split()[0].isdigit()]
        if not nums:
            return None
        f = [float(x) for x in nums[-1]]
        return {"pct_us": f[1], "MBps": f[5] * 1.048576}
    finally:
        try:
            srv.wait(10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()


def install_package(tmp):
    """pip-installs python/ into tmp/site (built against build/) and puts it on sys.path
    (and on PYTHONPATH, for worker processes started by spawn)."""
    site = os.path.join(tmp, "site")
    env = dict(os.environ, S3RDMA_BUILD=os.path.join(ROOT, "build"),
               S3RDMA_INCLUDE=os.path.join(ROOT, "include"), PIP_NO_INDEX="1")
    src = os.path.join(tmp, "pkg")
    subprocess.run(["cp", "-r", os.path.join(ROOT, "python"), src], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", site,
                    src], check=True, env=env, stdout=subprocess.DEVNULL)
    sys.path.insert(0, site)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in [site, os.environ.get("PYTHONPATH")] if p)
