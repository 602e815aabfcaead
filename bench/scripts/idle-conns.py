#!/usr/bin/env python3
"""Server memory per idle connection: open N keep-alive connections to a
kubeshard on 127.0.0.1:PORT, send one request on each (a GET of /readyz, or
a watch of ConfigMaps), leave them open, and report the growth of the
server's resident memory per connection.

    bench/scripts/idle-conns.py PORT N get|watch SERVER_PID

Loopback only.
"""
import resource
import socket
import sys
import time

hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
port, n, mode, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])


def rss_kib():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])
    raise SystemExit("no such server process")


path = "/readyz" if mode == "get" else "/api/v1/namespaces/default/configmaps?watch=1"
request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
base = rss_kib()
conns = []
for _ in range(n):
    c = socket.create_connection(("127.0.0.1", port))
    c.sendall(request)
    conns.append(c)
time.sleep(2)
for c in conns:  # take the answers so no send buffer stays full
    c.setblocking(False)
    try:
        c.recv(65536)
    except BlockingIOError:
        pass
time.sleep(1)
after = rss_kib()
print(f"{mode} {n} connections: RSS {base} KiB -> {after} KiB, {(after - base) * 1024 // n} bytes per connection")
