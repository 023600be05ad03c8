"""The namespace-host harness itself: separate hostnames that do not resolve, real TCP over the
veth links (seen in the byte counters), rate limits, and removal of everything it made."""
import json
import subprocess
import sys
import textwrap
import time

import pytest

from pyg_sar.testing.netns import NetnsHosts

_PY = [sys.executable, "-I", "-S", "-c"]

_SERVER = textwrap.dedent("""
    import socket, sys
    s = socket.socket(); s.bind(("0.0.0.0", 5001)); s.listen(1)
    print("listening", flush=True)
    c, _ = s.accept(); n = 0
    while True:
        d = c.recv(1 << 20)
        if not d: break
        n += len(d)
    print(n, flush=True)
""")

_CLIENT = textwrap.dedent("""
    import socket, sys
    c = socket.create_connection((sys.argv[1], 5001), timeout=30)
    c.sendall(b"x" * int(sys.argv[2])); c.close()
""")

_WHO = textwrap.dedent("""
    import json, socket, sys
    try:
        peer = socket.gethostbyname(sys.argv[1])
    except OSError as e:
        peer = "unresolved"
    print(json.dumps([socket.gethostname(), peer]))
""")


def _namespaces():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _send(hosts, src, dst, nbytes):
    server = hosts.popen(dst, [*_PY, _SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "listening"
        hosts.run(src, [*_PY, _CLIENT, hosts.addresses[dst], str(nbytes)], timeout=60,
                  check=True)
        out, _ = server.communicate(timeout=60)
    finally:
        server.kill()
    return int(out.strip())


def test_hosts_have_their_own_names_and_talk_tcp_over_the_links():
    before = _namespaces()
    with NetnsHosts(3) as hosts:
        assert set(hosts.namespaces) | {hosts.switch} <= _namespaces() - before
        who = [json.loads(hosts.run(i, [*_PY, _WHO, "host0"], capture_output=True, text=True,
                                    check=True).stdout) for i in range(3)]
        assert [w[0] for w in who] == ["host0", "host1", "host2"]
        # No host resolves another's name (as on a cluster without DNS for its nodes).
        assert who[1][1] == "unresolved" and who[2][1] == "unresolved"
        counted = hosts.link_bytes()
        payload = 3_000_000
        assert _send(hosts, 1, 2, payload) == payload
        after = hosts.link_bytes()
        sent = after[1]["from_host"] - counted[1]["from_host"]
        got = after[2]["to_host"] - counted[2]["to_host"]
        assert sent >= payload and got >= payload  # it crossed both links, headers included
        assert after[0]["to_host"] - counted[0]["to_host"] < payload / 100  # not host0's
    assert not (_namespaces() - before)  # all removed


def test_nothing_is_left_when_the_body_raises():
    before = _namespaces()
    with pytest.raises(ZeroDivisionError):
        with NetnsHosts(2) as hosts:
            sleeper = hosts.popen(1, ["sleep", "300"])
            raise ZeroDivisionError("the body fails")
    assert not (_namespaces() - before)
    assert sleeper.wait(timeout=10) is not None  # killed with its namespace


def test_rate_limit_is_on_both_ends_of_every_link_and_slows_tcp():
    with NetnsHosts(2, rate="50mbit") as hosts:
        for ns, dev in [(hosts.switch, "h0"), (hosts.switch, "h1"),
                        (hosts.namespaces[0], "eth0"), (hosts.namespaces[1], "eth0")]:
            shown = subprocess.run(["tc", "-n", ns, "qdisc", "show", "dev", dev],
                                   capture_output=True, text=True).stdout
            assert "tbf" in shown and "50Mbit" in shown, shown
        start = time.monotonic()
        assert _send(hosts, 0, 1, 12_500_000) == 12_500_000  # 100 Mbit: 2 s at 50 Mbit/s
        assert time.monotonic() - start > 1.5  # a lower bound: the limit cannot be beaten


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="num_hosts"):
        NetnsHosts(0)
    with pytest.raises(ValueError, match="rate"):
        NetnsHosts(2, rate="fast")
    with pytest.raises(ValueError, match="delay"):
        NetnsHosts(2, delay="1 day")


def test_launcher_script_enters_the_named_host():
    with NetnsHosts(2) as hosts:
        script = hosts.launcher_script()
        # As Hydra calls ssh: options, the host, then the command words.
        out = subprocess.run([script, "-x", hosts.addresses[1], "hostname;", "ip", "-br",
                              "-4", "addr", "show", "eth0"], capture_output=True, text=True,
                             timeout=30)
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines()[0] == "host1" and hosts.addresses[1] in out.stdout
        bad = subprocess.run([script, "198.18.0.99", "true"], capture_output=True, text=True,
                             timeout=30)
        assert bad.returncode == 255 and "unknown host" in bad.stderr
