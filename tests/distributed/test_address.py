"""Addresses other ranks reach a rank by (pyg_sar.distributed.address), and the watchdog's
set-up when a rank cannot reach the hub: named on every rank within the timeout."""
import socket
import threading
import time

import pytest

from pyg_sar.distributed import address
from pyg_sar.distributed.hub import FailureHub
from tests.distributed.thread_allgather import ThreadComm


def test_interfaces_include_loopback_up():
    found = address.interfaces()
    lo = [i for i in found if i.loopback]
    assert lo and lo[0].address.startswith("127.") and lo[0].prefixlen == 8


def test_route_source_of_loopback_and_unroutable():
    assert address.route_source("127.0.0.1") == "127.0.0.1"
    assert address.route_source("not a host name at all.invalid") is None


def test_use_interface_towards_keeps_a_user_setting(monkeypatch):
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "eth7")
    assert address.use_interface_towards("127.0.0.1") == "eth7"
    monkeypatch.delenv("GLOO_SOCKET_IFNAME")
    assert address.use_interface_towards("127.0.0.1") == "lo"
    assert address.preferred_address() == "127.0.0.1"  # lo's address, from the variable


def _desc(key, preferred, *addrs):
    return {"key": key, "preferred": preferred,
            "interfaces": [{"name": f"eth{i}", "address": a.split("/")[0],
                            "prefixlen": int(a.split("/")[1]), "loopback": False}
                           for i, a in enumerate(addrs)]}


def test_choose_address():
    one = _desc("k0", None, "10.0.0.1/24")
    assert address.choose_address([one, dict(one)]) == "127.0.0.1"  # one network stack
    # Preferred (GLOO_SOCKET_IFNAME / route to MASTER_ADDR) wins unless it is loopback.
    assert address.choose_address([_desc("a", "192.0.2.7", "10.0.0.1/24"),
                                   _desc("b", None, "10.0.0.2/24")]) == "192.0.2.7"
    # Otherwise: rank 0's address on the subnet that the others have an interface on.
    everyone = [_desc("a", "127.0.0.1", "172.16.0.1/16", "198.18.0.1/24"),
                _desc("b", None, "198.18.0.2/24"), _desc("c", None, "198.18.0.3/24")]
    assert address.choose_address(everyone) == "198.18.0.1"
    with pytest.raises(RuntimeError, match="no non-loopback IPv4 address"):
        address.choose_address([_desc("a", None), _desc("b", None, "10.0.0.2/24")])


def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_hub_is_named_on_every_rank_at_once(monkeypatch):
    """Rank 1 is handed a hub address it cannot reach: both ranks raise, naming rank 1 and
    the address, long before the timeout (rank 0 used to wait it out in accept())."""
    monkeypatch.setenv("PYG_SAR_WITNESS", "0")
    port = _closed_port()

    def wrong_endpoint(everyone):
        if isinstance(everyone[0], dict) and everyone[0].get("endpoint"):
            everyone[0] = dict(everyone[0], endpoint=["127.0.0.1", port])
        return everyone

    comm = ThreadComm(2)
    errors = {}

    def rank(r):
        dog = FailureHub(r, 2, 2.0, 45.0)
        try:
            dog._connect(comm.view(r, wrong_endpoint if r == 1 else None), "127.0.0.1",
                         120.0, None)
        except RuntimeError as e:
            errors[r] = str(e)
        finally:
            for sock in dog._peers.values():
                sock.close()
            if dog._server is not None:
                dog._server.close()

    start = time.monotonic()
    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    elapsed = time.monotonic() - start
    assert sorted(errors) == [0, 1], errors
    for text in errors.values():
        assert "rank 1 (host " in text and f"127.0.0.1:{port}" in text, text
    assert elapsed < 60.0, elapsed  # not the 120 s timeout (a wide margin: a loaded host)
