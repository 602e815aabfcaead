#!/usr/bin/env python3
"""Robustness under attack, measured from outside (BENCHMARKS.md, "Attacks").

    bench/scripts/attacks.py BINARY [BINARY ...] [--attacks fd,slow,flood,patch]

Starts each kubeshard binary in turn (TLS, RBAC, durable storage in a
scratch directory, loopback only) and runs each attack against it while an
administrator keeps asking for an object over a fresh TLS connection:

  fd     unauthenticated TCP connections, twice the process's descriptor
         limit (the server runs with `ulimit -n 1024`), held for 10 s
  slow   100 clients LIST 2,000 ConfigMaps of 6 KB (12 MB) and never read
  flood  1,000 HTTP/1.1 connections that each LIST the same and read slowly
  patch  the largest copying JSON patch the server accepts, and the
         doubling patch the attack used

For each it prints the server's peak RSS (sampled from /proc every 50 ms),
the administrator's GET latency during and after (median, max, and how
many did not answer within 5 s), whether the server gave its descriptors
back after the attack, and its CPU use once the attackers left. Every
address is loopback; every process started is killed at the end.
"""

import argparse
import base64
import http.client
import json
import os
import resource
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

OBJECTS = 2000
PAYLOAD = 6000


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, binary, fd_limit=1024, extra=()):
        self.dir = tempfile.mkdtemp(prefix="ks-attack-")
        self.port = free_port()
        self.plain_port = free_port()

        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        n = min(fd_limit, hard)

        def limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen(
            [binary, "--secure-port", str(self.port), "--bind-address", "127.0.0.1",
             "--insecure-port", str(self.plain_port), "--data-dir", os.path.join(self.dir, "data"),
             "--shards", "2", *extra],
            stdout=subprocess.DEVNULL, stderr=self.log, stdin=subprocess.DEVNULL,
            preexec_fn=limit)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if self.plain_get("/readyz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.05)
        else:
            raise SystemExit(f"{binary} did not become ready; log in {self.dir}")
        kc = open(os.path.join(self.dir, "data", "admin.kubeconfig")).read()
        self.cert = os.path.join(self.dir, "admin.crt")
        self.key = os.path.join(self.dir, "admin.key")
        self.ca = os.path.join(self.dir, "ca.crt")
        for line in kc.splitlines():
            line = line.strip()
            for field, path in (("client-certificate-data:", self.cert),
                                ("client-key-data:", self.key),
                                ("certificate-authority-data:", self.ca)):
                if line.startswith(field):
                    with open(path, "wb") as f:
                        f.write(base64.b64decode(line.split(":", 1)[1].strip()))

    def context(self, client_cert=True):
        ctx = ssl.create_default_context(cafile=self.ca)
        ctx.check_hostname = False
        if client_cert:
            ctx.load_cert_chain(self.cert, self.key)
        return ctx

    def plain_get(self, path, timeout=5):
        c = http.client.HTTPConnection("127.0.0.1", self.plain_port, timeout=timeout)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, body

    def plain(self, method, path, body, ctype="application/json"):
        c = http.client.HTTPConnection("127.0.0.1", self.plain_port, timeout=60)
        c.request(method, path, body=body, headers={"Content-Type": ctype})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def admin_get(self, timeout=5):
        """Seconds for an administrator's GET on a new TLS connection, or None."""
        t = time.time()
        try:
            c = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                            context=self.context())
            c.request("GET", "/api/v1/namespaces/default")
            r = c.getresponse()
            r.read()
            c.close()
            return time.time() - t if r.status == 200 else None
        except (OSError, http.client.HTTPException):
            return None

    def rss_kib(self):
        try:
            for line in open(f"/proc/{self.proc.pid}/status"):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    def fds(self):
        try:
            return len(os.listdir(f"/proc/{self.proc.pid}/fd"))
        except OSError:
            return 0

    def cpu_seconds(self):
        f = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()


class Probe:
    """Samples RSS every 50 ms and admin GET latency every 200 ms."""

    def __init__(self, server):
        self.s = server
        self.peak = server.rss_kib()
        self.latencies = []
        self.failed = 0
        self.stopping = False
        self.threads = [threading.Thread(target=self.rss, daemon=True),
                        threading.Thread(target=self.admin, daemon=True)]
        for t in self.threads:
            t.start()

    def rss(self):
        while not self.stopping:
            self.peak = max(self.peak, self.s.rss_kib())
            time.sleep(0.05)

    def admin(self):
        while not self.stopping:
            took = self.s.admin_get()
            if took is None:
                self.failed += 1
            else:
                self.latencies.append(took)
            time.sleep(0.2)

    def stop(self):
        self.stopping = True
        for t in self.threads:
            t.join()
        lat = sorted(self.latencies)
        return {
            "peak_rss_mib": round(self.peak / 1024, 1),
            "admin_get_median_ms": round(statistics.median(lat) * 1000, 1) if lat else None,
            "admin_get_max_ms": round(lat[-1] * 1000, 1) if lat else None,
            "admin_get_failed": self.failed,
            "admin_gets": len(lat) + self.failed,
        }


def fill(s):
    s.plain("POST", "/api/v1/namespaces", json.dumps({"metadata": {"name": "big"}}))
    payload = "x" * PAYLOAD

    def work(t):
        for i in range(OBJECTS // 4):
            body = json.dumps({"metadata": {"name": f"cm-{t}-{i}"}, "data": {"k": payload}})
            s.plain("POST", "/api/v1/namespaces/big/configmaps", body)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def after(s, baseline_fds, out):
    """Whether descriptors come back and the cores quiet down once the
    attackers are gone."""
    deadline = time.time() + 20
    while time.time() < deadline and s.fds() > baseline_fds + 16:
        time.sleep(0.2)
    out["fds_back_within_20s"] = s.fds() <= baseline_fds + 16
    c0 = s.cpu_seconds()
    time.sleep(2)
    out["cpu_after_percent"] = round((s.cpu_seconds() - c0) / 2 * 100)
    took = s.admin_get()
    out["admin_get_after_ms"] = round(took * 1000, 1) if took else None


def attack_fd(binary):
    s = Server(binary, fd_limit=1024)
    base = s.fds()
    probe = Probe(s)
    held = []
    t_end = time.time() + 10
    while time.time() < t_end:
        if len(held) < 2048:
            try:
                held.append(socket.create_connection(("127.0.0.1", s.port), timeout=1))
            except OSError:
                pass
        else:
            time.sleep(0.05)
    out = probe.stop()
    out["connections_opened"] = len(held)
    for c in held:
        c.close()
    after(s, base, out)
    s.stop()
    return out


def stalled_list(s, ctx):
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(10)
    raw.connect(("127.0.0.1", s.port))
    c = ctx.wrap_socket(raw)
    c.sendall(b"GET /api/v1/namespaces/big/configmaps HTTP/1.1\r\nHost: x\r\n\r\n")
    return c


def reader_context(s):
    """A user who may list ConfigMaps but is not in system:masters (so the
    in-flight limit applies), with a certificate from the server's CA."""
    subprocess.run(["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj",
                    "/CN=reader", "-keyout", os.path.join(s.dir, "r.key"), "-out",
                    os.path.join(s.dir, "r.csr")], check=True, capture_output=True)
    ext = os.path.join(s.dir, "r.ext")
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=clientAuth\n")
    subprocess.run(["openssl", "x509", "-req", "-in", os.path.join(s.dir, "r.csr"), "-CA",
                    os.path.join(s.dir, "data", "pki", "ca.crt"), "-CAkey",
                    os.path.join(s.dir, "data", "pki", "ca.key"), "-CAcreateserial", "-days", "1",
                    "-extfile", ext, "-out", os.path.join(s.dir, "r.crt")],
                   check=True, capture_output=True)
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    s.plain("POST", f"{rbac}/clusterroles", json.dumps({
        "metadata": {"name": "cm-reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "get"]}]}))
    s.plain("POST", f"{rbac}/clusterrolebindings", json.dumps({
        "metadata": {"name": "cm-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cm-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "reader"}]}))
    ctx = ssl.create_default_context(cafile=s.ca)
    ctx.check_hostname = False
    ctx.load_cert_chain(os.path.join(s.dir, "r.crt"), os.path.join(s.dir, "r.key"))
    return ctx


def attack_slow(binary):
    s = Server(binary, fd_limit=65536)
    fill(s)
    ctx = reader_context(s)
    base = s.fds()
    probe = Probe(s)
    held = [stalled_list(s, ctx) for _ in range(100)]
    time.sleep(10)
    out = probe.stop()
    out["rss_held_mib"] = round(s.rss_kib() / 1024, 1)
    for c in held:
        c.close()
    after(s, base, out)
    s.stop()
    return out


def attack_flood(binary):
    s = Server(binary, fd_limit=65536)
    fill(s)
    ctx = reader_context(s)
    base = s.fds()
    probe = Probe(s)
    stop = threading.Event()

    def slow_reader():
        while not stop.is_set():
            try:
                c = stalled_list(s, ctx)
                # Read a little, slowly, then give up and come back.
                for _ in range(20):
                    if stop.is_set():
                        break
                    c.recv(512)
                    time.sleep(0.5)
                c.close()
            except OSError:
                time.sleep(0.1)

    threads = [threading.Thread(target=slow_reader, daemon=True) for _ in range(1000)]
    for t in threads:
        t.start()
    time.sleep(15)
    out = probe.stop()
    stop.set()
    for t in threads:
        t.join(timeout=15)
    after(s, base, out)
    s.stop()
    return out


def attack_patch(binary):
    s = Server(binary, fd_limit=65536)
    cm = {"metadata": {"name": "bomb"}, "data": {"seed": "z" * 1000}}
    s.plain("POST", "/api/v1/namespaces/default/configmaps", json.dumps(cm))
    out = {}
    # The largest accepted: 1 KB copied over and over, as close to the
    # 3 MiB bounds (copies, and the object's size) as they allow.
    copies = 3000
    ops = [{"op": "copy", "from": "/data/seed", "path": f"/data/c{i}"} for i in range(copies)]
    probe = Probe(s)
    t = time.time()
    code, _ = s.plain("PATCH", "/api/v1/namespaces/default/configmaps/bomb", json.dumps(ops),
                      "application/json-patch+json")
    out["largest_copy_patch"] = {"copies": copies, "code": code,
                                 "seconds": round(time.time() - t, 3)}
    out.update(probe.stop())
    # The attack: doubling /data, 20 times (30 killed the old server).
    probe = Probe(s)
    ops = [{"op": "copy", "from": "/data", "path": f"/data/x{i}"} for i in range(20)]
    t = time.time()
    try:
        code, body = s.plain("PATCH", "/api/v1/namespaces/default/configmaps/bomb",
                             json.dumps(ops), "application/json-patch+json")
    except OSError as e:
        code, body = str(e), b""
    d = probe.stop()
    out["doubling_patch"] = {"code": code, "seconds": round(time.time() - t, 3),
                             "response_bytes": len(body), "peak_rss_mib": d["peak_rss_mib"],
                             "admin_get_max_ms": d["admin_get_max_ms"]}
    s.stop()
    return out


ATTACKS = {"fd": attack_fd, "slow": attack_slow, "flood": attack_flood, "patch": attack_patch}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("binaries", nargs="+")
    p.add_argument("--attacks", default="fd,slow,flood,patch")
    a = p.parse_args()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    results = {}
    for name in a.attacks.split(","):
        for b in a.binaries:
            print(f"== {name} against {b}", file=sys.stderr, flush=True)
            results.setdefault(name, {})[b] = ATTACKS[name](b)
            print(json.dumps(results[name][b]), file=sys.stderr, flush=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
