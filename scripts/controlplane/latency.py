#!/usr/bin/env python3
"""Request latency by verb as the control plane's own clients measured it:
client-go's rest_client_request_duration_seconds histograms, scraped from
kube-scheduler's and kube-controller-manager's /metrics before and after a
run, summed over both and diffed.

    latency.py BEFORE.prom... -- AFTER.prom...

Prints one JSON object: per verb, the requests in the window and their
p50/p99 in milliseconds (histogram_quantile's linear interpolation within
a bucket, as Prometheus computes it). Bucket bounds are client-go's, so a
p99 reads as "at most this bucket's bound" when requests are fast.
"""
import json
import re
import sys
from collections import defaultdict

LINE = re.compile(r'^rest_client_request_duration_seconds_bucket\{([^}]*)\} ([0-9.eE+-]+)$')


def buckets(paths):
    out = defaultdict(lambda: defaultdict(float))
    for p in paths:
        for line in open(p):
            m = LINE.match(line.strip())
            if not m:
                continue
            labels = dict(kv.split('=', 1) for kv in re.findall(r'\w+="[^"]*"', m.group(1)))
            verb = labels.get('verb', '""').strip('"')
            le = labels.get('le', '"+Inf"').strip('"')
            out[verb][float('inf') if le == '+Inf' else float(le)] += float(m.group(2))
    return out


def quantile(q, cumulative):
    bounds = sorted(cumulative)
    total = cumulative[bounds[-1]]
    if total <= 0:
        return None
    rank, prev_bound, prev_count = q * total, 0.0, 0.0
    for b in bounds:
        c = cumulative[b]
        if c >= rank:
            if b == float('inf'):
                return prev_bound
            return prev_bound + (b - prev_bound) * (rank - prev_count) / max(c - prev_count, 1e-9)
        prev_bound, prev_count = b, c
    return prev_bound


def main():
    args = sys.argv[1:]
    cut = args.index('--')
    before, after = buckets(args[:cut]), buckets(args[cut + 1:])
    out = {}
    for verb, hist in sorted(after.items()):
        diff = {b: c - before.get(verb, {}).get(b, 0.0) for b, c in hist.items()}
        n = diff.get(float('inf'), 0)
        if n <= 0:
            continue
        out[verb] = {'requests': int(n),
                     'p50_ms': round(1000 * quantile(0.5, diff), 2),
                     'p99_ms': round(1000 * quantile(0.99, diff), 2)}
    print(json.dumps(out))


if __name__ == '__main__':
    main()
