"""Train across two hosts under torchrun, on this one machine: the hosts are
Linux network namespaces joined by a (optionally rate-limited) link.

    sudo python examples/across_hosts.py examples/gcn.py --epochs 50
    sudo python examples/across_hosts.py --rate 100mbit \
        examples/compression.py --codec truncate

Any example runs unchanged: ``torchrun --nnodes 2`` starts one agent in each
host (``host0`` at 198.18.0.1, ``host1`` at 198.18.0.2), the rendezvous is on
host 0's address, and the ranks talk over real TCP through a bridge (gloo).
Nothing is resolved by hostname, and no interface, address or route of this
machine changes: the namespaces, the bridge and the ``tc`` rate limits exist
only while the job runs and are removed when it ends (or fails). On a real
cluster, run the same ``torchrun --nnodes 2 --node-rank R --master-addr
HOST0 ...`` on each machine instead.

Needs root, ``ip``, ``tc`` and ``unshare`` (``pyg_sar.testing.netns``).
"""
import argparse
import os
import subprocess
import sys
import tempfile

from pyg_sar.testing.netns import NetnsHosts, unavailable_reason

parser = argparse.ArgumentParser()
parser.add_argument('--hosts', type=int, default=2)
parser.add_argument('--rate', type=str, default=None,
                    help="rate limit of every link, e.g. '100mbit' (tc tbf)")
parser.add_argument('--timeout', type=float, default=600.0,
                    help='seconds before the job is stopped')
parser.add_argument('script', help='the training script to run on every host')
parser.add_argument('script_args', nargs=argparse.REMAINDER)
args = parser.parse_args()

reason = unavailable_reason()
if reason is not None:
    sys.exit(f'across_hosts.py: network-namespace hosts unavailable: {reason}')

env = dict(os.environ, OMP_NUM_THREADS='1', PYTHONUNBUFFERED='1')
script = os.path.abspath(args.script)
with NetnsHosts(args.hosts, rate=args.rate) as hosts, \
        tempfile.TemporaryDirectory() as tmp:
    print(f'Hosts: {", ".join(hosts.addresses)}'
          + (f', links limited to {args.rate}' if args.rate else ''))
    before = hosts.link_bytes()
    procs, logs = [], []
    for h in range(args.hosts):
        cmd = hosts.torchrun_command(h, [script, *args.script_args])
        # Host 0 (rank 0) prints to this terminal; the others to a log.
        log = None if h == 0 else open(os.path.join(tmp, f'host{h}.log'), 'w+')
        logs.append(log)
        procs.append(subprocess.Popen(cmd, env=env, stdout=log,
                                      stderr=subprocess.STDOUT if log else None,
                                      stdin=subprocess.DEVNULL))
    try:
        codes = [p.wait(timeout=args.timeout) for p in procs]
    except subprocess.TimeoutExpired:
        codes = None
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    after = hosts.link_bytes()
    for h, log in enumerate(logs):
        if log is not None and (codes is None or codes[h] != 0):
            log.seek(0)
            print(f'--- host{h}:\n{log.read()[-5000:]}', file=sys.stderr)
    if codes is None:
        sys.exit(f'across_hosts.py: the job did not end within '
                 f'{args.timeout:.0f} s (stopped)')
    crossed = sum(a['from_host'] - b['from_host'] for a, b in zip(after, before))
    print(f'Bytes that crossed the links: {crossed / 2**20:.1f} MiB')
    if any(codes):
        sys.exit(f'across_hosts.py: exit codes {codes}')
