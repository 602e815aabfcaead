#!/usr/bin/env python3
"""Latency probe for the APF flood scenario (run by apf.sh).

Over the privileged port, acting through Impersonate-User: another
tenant's GETs of ten ConfigMaps (probe-0 … probe-9, in turn) and
kube-scheduler's lease renewals
(GET + PUT of its Lease, classified as system-leader-election), one at a
time, SAMPLES of each. Prints one JSON line with p50/p99 in ms.

    [KEEPALIVE=1] [AUDIT_LOG=PATH] apf-probe.py URL SAMPLES

With AUDIT_LOG (the server's audit log, with apf-audit.yaml's policy),
it also prints the other tenant's GET as the server timed it, from the
request's arrival to its response (the audit event's two timestamps):
what the server adds, without the probe's own wait for a core on a
machine it shares with the flood.
"""
import datetime
import http.client
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

url, samples = sys.argv[1], int(sys.argv[2])


# KEEPALIVE=1: each user keeps one connection open, as client-go's
# transport does; otherwise every request opens its own.
keepalive = os.environ.get("KEEPALIVE") == "1"
conns = {}


def call(method, path, user, body=None):
    headers = {"Impersonate-User": user}
    if body is not None:
        headers["Content-Type"] = "application/json"
    t = time.perf_counter()
    if keepalive:
        c = conns.get(user)
        if c is None:
            c = conns[user] = http.client.HTTPConnection(urllib.parse.urlsplit(url).netloc, timeout=30)
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        data, code = r.read(), r.status
        if code >= 400:
            raise urllib.error.HTTPError(url + path, code, r.reason, r.headers, None)
        return (time.perf_counter() - t) * 1000, code, data
    req = urllib.request.Request(url + path, method=method, data=body, headers=headers)
    with urllib.request.urlopen(req, timeout=30) as r:
        data = r.read()
        code = r.status
    return (time.perf_counter() - t) * 1000, code, data


def pct(xs, p):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(len(xs) * p))], 2)


audit_log = os.environ.get("AUDIT_LOG")
audit_start = os.path.getsize(audit_log) if audit_log and os.path.exists(audit_log) else 0


def server_ms():
    """The calm tenant's GETs as the audit log timed them, since the start."""
    def ts(s):
        return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
    out = []
    with open(audit_log, "rb") as f:
        f.seek(audit_start)
        for line in f:
            e = json.loads(line)
            if e.get("verb") == "get" and (e.get("impersonatedUser") or {}).get("username") == "calm":
                out.append((ts(e["stageTimestamp"]) - ts(e["requestReceivedTimestamp"])) * 1000)
    return out


lease = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"
gets, renewals, refused = [], [], 0
for i in range(samples):
    # Ten objects, on both shards: some served by the shard of the
    # connection's core, some by the other one.
    ms, _, _ = call("GET", "/api/v1/namespaces/default/configmaps/probe-%d" % (i % 10), "calm")
    gets.append(ms)
    try:
        ms1, _, data = call("GET", lease, "system:kube-scheduler")
        obj = json.loads(data)
        obj["spec"]["renewTime"] = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        ms2, _, _ = call("PUT", lease, "system:kube-scheduler", json.dumps(obj).encode())
        renewals.append(ms1 + ms2)
    except urllib.error.HTTPError as e:
        if e.code == 429:
            refused += 1
        else:
            raise
    time.sleep(0.01)
report = {
    "get_p50_ms": pct(gets, 0.5), "get_p99_ms": pct(gets, 0.99),
    "renewal_p50_ms": pct(renewals, 0.5) if renewals else None,
    "renewal_p99_ms": pct(renewals, 0.99) if renewals else None,
    "renewals_refused": refused, "samples": samples,
}
if audit_log:
    # The log is written as requests finish: wait for the last ones.
    for _ in range(50):
        timed = server_ms()
        if len(timed) >= samples:
            break
        time.sleep(0.1)
    report["server_get_p50_ms"] = pct(timed, 0.5) if timed else None
    report["server_get_p99_ms"] = pct(timed, 0.99) if timed else None
print(json.dumps(report))
