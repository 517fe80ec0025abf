"""Gateways that advertise each other (the server's `peers` setting, the x-s3rdma-peers
header, docs/protocol.md §1): a client given one gateway adds the others to its endpoint list,
spreads its requests over them round robin and fails over when one dies. Two s3rdmad share
nothing here, so each holds its own copy of one key whose bytes name the gateway that served
it; no shared storage is needed to see which endpoint answered."""
import os

import pytest
import s3rdma
from conftest import USERS
from s3r_itest import (UCX_ENVS, RdmaServer, ServerStartError, boto_client, free_port,
                       raw_request)

AK, SK = USERS[0]
BUCKET = "peers"


@pytest.fixture
def pair(make_server):
    """Gateways a and b, each advertising the other; s3://peers/who says which answered."""
    pa, pb = free_port(), free_port()
    a = make_server(name="a", start=False, config_extra=f"peers: http://127.0.0.1:{pb}\n")
    b = make_server(name="b", start=False,
                    config_extra=f"peers:\n  - http://127.0.0.1:{pa}\n")
    a.start(port=pa)
    b.start(port=pb)
    assert (a.port, b.port) == (pa, pb)  # the ports the other advertises
    for srv, name in ((a, b"a"), (b, b"b")):
        s3 = boto_client(srv)
        s3.create_bucket(Bucket=BUCKET)
        s3.put_object(Bucket=BUCKET, Key="who", Body=name)
    return a, b


def who(c, n):
    """Which gateway served each of n GETs, as a string."""
    return "".join(c.get_object(BUCKET, "who").decode() for _ in range(n))


def client(srv, **kw):
    return s3rdma.Client(endpoint=srv.endpoint, access_key=AK, secret_key=SK,
                         transport="http", **kw)


def test_a_client_given_one_gateway_uses_both(pair):
    a, b = pair
    with client(a) as c:
        served = who(c, 21)
    # The first reply (from a, the one configured) names b; from then on round robin.
    assert served[0] == "a" and served.count("b") == 10 and served.count("a") == 11, served
    # Opting out, or naming the endpoints yourself, keeps the list as given.
    with client(a, peer_discovery=False) as c:
        assert who(c, 6) == "aaaaaa"
    with s3rdma.Client(endpoint=f"{a.endpoint},{a.endpoint}", access_key=AK, secret_key=SK,
                       transport="http") as c:
        assert who(c, 6) == "aaaaaa"


def test_the_configured_gateway_dies_and_the_advertised_one_serves(pair):
    a, b = pair
    with client(a) as c:
        assert who(c, 2) == "ab"
        a.kill9()
        # Every request still succeeds: a refused connection moves on to b.
        assert who(c, 8) == "b" * 8
        c.put_object(BUCKET, "after", b"written while a is down")
    assert boto_client(b).get_object(Bucket=BUCKET, Key="after")["Body"].read() == \
        b"written while a is down"


def test_peers_are_named_to_authenticated_clients_only(pair):
    a, b = pair
    signed = raw_request(a, "GET", f"/{BUCKET}/who")
    assert signed.status == 200 and signed.headers.get("x-s3rdma-peers") == b.endpoint
    anonymous = raw_request(a, "GET", f"/{BUCKET}/who", user=None)
    assert anonymous.status == 403 and "x-s3rdma-peers" not in anonymous.headers
    wrong = raw_request(a, "GET", f"/{BUCKET}/who", user=(AK, "not-the-secret"))
    assert wrong.status == 403 and "x-s3rdma-peers" not in wrong.headers


@pytest.mark.parametrize("value", ["ftp://127.0.0.1:1", "http://", "http://h:1/path",
                                   "http://a:1,,http://b:1", "http://a:1,", "http://a b:1",
                                   ",".join(f"http://h{i}:1" for i in range(16))])
def test_a_malformed_peers_setting_stops_the_server(make_server, value):
    srv = make_server(start=False, config_extra=f"peers: \"{value}\"\n")
    with pytest.raises(ServerStartError):
        srv.start(timeout=10)
    assert "s3rdmad: peers" in srv.log_text(), srv.log_tail(5)


@pytest.fixture(params=list(UCX_ENVS))
def rdma_pair(request, tmp_path, monkeypatch):
    """Two gateways with session ports, advertising each other; s3://peers/who as above.
    The client in this process runs under the same UCX setting as the servers."""
    for k in [k for k in os.environ if k.startswith("UCX_")]:
        monkeypatch.delenv(k)
    for k, v in UCX_ENVS[request.param].items():
        monkeypatch.setenv(k, v)
    pa, pb = free_port(), free_port()
    a = RdmaServer(tmp_path, "ra", UCX_ENVS[request.param],
                   extra_args=["--peers", f"http://127.0.0.1:{pb}"])
    b = RdmaServer(tmp_path, "rb", UCX_ENVS[request.param],
                   extra_args=["--peers", f"http://127.0.0.1:{pa}"])
    a.srv.start(port=pa)
    b.srv.start(port=pb)
    assert (a.port, b.port) == (pa, pb)
    for srv, name in ((a, b"a"), (b, b"b")):
        s3 = boto_client(srv)
        s3.create_bucket(Bucket=BUCKET)
        s3.put_object(Bucket=BUCKET, Key="who", Body=name)
    yield a, b
    for s in (a, b):
        if s.srv.alive():
            s.stop()


def test_native_sessions_move_to_an_advertised_gateway(rdma_pair):
    a, b = rdma_pair
    # No RDMA endpoint given: each gateway is asked for its own, b's after a named b.
    with s3rdma.Client(endpoint=a.endpoint, access_key=AK, secret_key=SK,
                       transport="native") as c:
        assert who(c, 3) == "aaa"  # one session, on a (the first that answers)
        assert c.stats()["rdma_sessions"] == 1
        a.srv.kill9()
        # a's session is gone: every request still succeeds, and the next session is b's.
        assert who(c, 4) == "bbbb"
        before = c.stats()
        assert who(c, 1) == "b"
        after = c.stats()
        assert after["rdma_sessions"] == 2 and after["native_ops"] == before["native_ops"] + 1, \
            after
