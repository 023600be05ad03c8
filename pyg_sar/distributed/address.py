r"""The address by which ranks on other hosts reach this one, from what the transport knows.

Never from resolving a hostname: on a cluster whose nodes have no DNS entries (or whose
``/etc/hosts`` maps the hostname to a loopback address), ``gethostbyname(gethostname())``
fails or names an address no other host can reach. Instead, in this order:

1. ``GLOO_SOCKET_IFNAME``: the address of the interface the user named;
2. the rendezvous address (``MASTER_ADDR``): the local address of the interface the kernel
   routes to it (a UDP ``connect``, which sends nothing, then ``getsockname``);
3. otherwise (``mpiexec`` without ``MASTER_ADDR``): the ranks exchange their interfaces'
   addresses and netmasks, and rank 0 offers its address on the subnet that every other
   host has an interface on.

Every rank of one network stack (same kernel boot and network namespace) uses loopback.
Linux only for interface listing (``ioctl``); elsewhere step 3 has no candidates.
"""
from __future__ import annotations

import ipaddress
import os
import socket
import struct
from dataclasses import asdict, dataclass
from typing import Optional

_SIOCGIFFLAGS = 0x8913
_SIOCGIFADDR = 0x8915
_SIOCGIFNETMASK = 0x891B
_IFF_UP = 0x1
_IFF_LOOPBACK = 0x8


@dataclass(frozen=True)
class Interface:
    """One IPv4 address of a network interface."""

    name: str
    address: str
    prefixlen: int
    loopback: bool

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.ip_network(f"{self.address}/{self.prefixlen}", strict=False)

    def as_dict(self) -> dict:
        return asdict(self)


def _ioctl(sock: socket.socket, request: int, name: str) -> bytes:
    import fcntl
    return fcntl.ioctl(sock.fileno(), request, struct.pack("256s", name.encode()[:15]))


def interfaces() -> list[Interface]:
    """The IPv4 addresses of this host's interfaces that are up (primary address of each),
    from the kernel. Empty where interfaces cannot be listed this way (not Linux)."""
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return []
    out = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for name in names:
            try:
                flags = struct.unpack("H", _ioctl(sock, _SIOCGIFFLAGS, name)[16:18])[0]
                if not flags & _IFF_UP:
                    continue
                address = socket.inet_ntoa(_ioctl(sock, _SIOCGIFADDR, name)[20:24])
                mask = socket.inet_ntoa(_ioctl(sock, _SIOCGIFNETMASK, name)[20:24])
            except (OSError, ImportError):
                continue  # no IPv4 address, or no ioctl here
            prefix = ipaddress.ip_network(f"0.0.0.0/{mask}").prefixlen
            out.append(Interface(name, address, prefix, bool(flags & _IFF_LOOPBACK)))
    return out


def route_source(destination: str) -> Optional[str]:
    """The local address the kernel uses to reach ``destination`` (an address, or a name
    the user gave as the rendezvous host), or ``None`` when there is no route to it."""
    try:
        infos = socket.getaddrinfo(destination, 9, socket.AF_INET, socket.SOCK_DGRAM)
    except OSError:
        return None
    for *_, sockaddr in infos:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            try:
                sock.connect(sockaddr)  # UDP: picks the route and source, sends nothing
                return sock.getsockname()[0]
            except OSError:
                continue
    return None


def interface_of(address: str) -> Optional[Interface]:
    """This host's interface that has ``address``, or ``None``."""
    return next((i for i in interfaces() if i.address == address), None)


def network_key() -> str:
    """Processes with the same key share one network stack (same kernel boot, same network
    namespace), so loopback reaches them. Not the hostname: containers and namespaces may
    share one, or separate hosts may both be called ``localhost``."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        netns = os.stat("/proc/self/ns/net").st_ino
    except OSError:
        return f"{socket.gethostname()}/{os.getpid()}"  # unknown: never assume shared
    return f"{boot}/{netns}"


def preferred_address(rendezvous: Optional[str] = None) -> Optional[str]:
    """This rank's address as the transport knows it (steps 1 and 2 of the module docstring):
    ``GLOO_SOCKET_IFNAME``'s address, else the source address towards ``rendezvous`` (by
    default ``MASTER_ADDR``); ``None`` when neither is known."""
    ifname = os.environ.get("GLOO_SOCKET_IFNAME", "").split(",")[0].strip()
    if ifname:
        match = next((i for i in interfaces() if i.name == ifname), None)
        if match is not None:
            return match.address
    target = rendezvous if rendezvous is not None else os.environ.get("MASTER_ADDR")
    return route_source(target) if target else None


def describe_self(rendezvous: Optional[str] = None) -> dict:
    """What a rank tells the others (JSON-able) so that :func:`choose_address` can pick the
    address by which they reach it."""
    return {"key": network_key(), "preferred": preferred_address(rendezvous),
            "interfaces": [i.as_dict() for i in interfaces() if not i.loopback]}


def choose_address(everyone: list[dict], rank: int = 0) -> str:
    """The address by which every other rank reaches rank ``rank``, from all ranks'
    :func:`describe_self` (in rank order).

    Loopback when all ranks share one network stack; else the rank's preferred address
    (``GLOO_SOCKET_IFNAME`` / route to ``MASTER_ADDR``) when it is not a loopback one; else its
    address on a subnet that every other network stack has an interface on.

    Raises:
        RuntimeError: no address can be chosen (names what each rank has).
    """
    me = everyone[rank]
    if all(e["key"] == me["key"] for e in everyone):
        return "127.0.0.1"
    preferred = me.get("preferred")
    if preferred and not ipaddress.ip_address(preferred).is_loopback:
        return preferred
    others = [e for e in everyone if e["key"] != me["key"]]
    best, best_score = None, -1
    for mine in me["interfaces"]:
        net = Interface(**mine).network
        score = sum(any(ipaddress.ip_address(i["address"]) in net for i in e["interfaces"])
                    for e in others)
        if score > best_score:
            best, best_score = mine["address"], score
    if best is None:
        raise RuntimeError(
            f"pyg_sar.init: rank {rank} has no non-loopback IPv4 address that ranks on other "
            f"hosts could reach (its interfaces: {me['interfaces']}); set MASTER_ADDR to this "
            f"host's address or GLOO_SOCKET_IFNAME to the interface to use")
    return best


def use_interface_towards(destination: Optional[str]) -> Optional[str]:
    """Make gloo use the interface that reaches ``destination`` (the rendezvous address):
    sets ``GLOO_SOCKET_IFNAME`` for this process unless the user set it. Returns the
    interface gloo will use (``None``: left to gloo, as no route was found).

    Without it gloo binds to the address its hostname resolves to, and falls back to loopback
    where the hostname does not resolve: peers on other hosts then cannot connect."""
    current = os.environ.get("GLOO_SOCKET_IFNAME")
    if current:
        return current
    source = route_source(destination) if destination else None
    iface = interface_of(source) if source else None
    if iface is None:
        return None
    os.environ["GLOO_SOCKET_IFNAME"] = iface.name
    return iface.name


def expand_hostlist(hostlist: str) -> list[str]:
    """Slurm's compressed host list as names: ``"node[01-03,7],gpu5"`` ->
    ``["node01", "node02", "node03", "node7", "gpu5"]`` (ranges keep their zero padding).

    Raises:
        ValueError: an unbalanced bracket or a range that is not ``lo-hi`` with ``lo <= hi``.
    """
    names: list[str] = []
    for item in _split_outside_brackets(hostlist):
        if "[" not in item:
            if "]" in item:
                raise ValueError(f"pyg_sar: bad Slurm host list {hostlist!r} (stray ']')")
            names.append(item)
            continue
        head, _, rest = item.partition("[")
        body, close, tail = rest.partition("]")
        if not close or "[" in body:
            raise ValueError(f"pyg_sar: bad Slurm host list {hostlist!r} (unbalanced '[')")
        expanded_tails = expand_hostlist(tail) if tail else [""]
        for part in body.split(","):
            lo, dash, hi = part.partition("-")
            if not lo.isdigit() or (dash and not hi.isdigit()) or (dash and int(hi) < int(lo)):
                raise ValueError(f"pyg_sar: bad range {part!r} in Slurm host list {hostlist!r}")
            for i in range(int(lo), int(hi if dash else lo) + 1):
                names.extend(f"{head}{i:0{len(lo)}d}{t}" for t in expanded_tails)
    return names


def _split_outside_brackets(text: str) -> list[str]:
    items, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c == "[") - (c == "]")
        if c == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [s for s in (s.strip() for s in items) if s]


def expand_tasks_per_node(spec: str) -> list[int]:
    """Slurm's tasks per node (``SLURM_STEP_TASKS_PER_NODE``) per node in node order:
    ``"2(x3),1"`` -> ``[2, 2, 2, 1]``.

    Raises:
        ValueError: an item that is neither ``N`` nor ``N(xK)``.
    """
    out: list[int] = []
    for item in spec.split(","):
        count, _, rep = item.strip().partition("(x")
        if not count.isdigit() or (rep and not (rep.endswith(")") and rep[:-1].isdigit())):
            raise ValueError(f"pyg_sar: bad Slurm tasks-per-node item {item!r} in {spec!r}")
        out.extend([int(count)] * (int(rep[:-1]) if rep else 1))
    return out
