#!/usr/bin/env python3
"""The density runs of scripts/controlplane.sh side by side, as markdown.

    report.py OUT_DIR TARGET...

Reads OUT_DIR/TARGET/result.json for each target that has one.
"""
import json
import os
import sys


def main():
    out, targets = sys.argv[1], sys.argv[2:]
    res = {}
    for t in targets:
        p = os.path.join(out, t, 'result.json')
        if os.path.exists(p):
            res[t] = json.load(open(p))
    if not res:
        print('no results in %s' % out)
        return
    names = list(res)

    def row(label, get):
        cells = []
        for t in names:
            try:
                v = get(res[t])
            except (KeyError, TypeError):
                v = None
            cells.append('-' if v is None else str(v))
        print('| %s | %s |' % (label, ' | '.join(cells)))

    print('| | %s |' % ' | '.join(names))
    print('| --- |' + ' ---: |' * len(names))
    row('pods Running / asked', lambda r: '%d / %d' % (r['running'], r['pods']))
    row('seconds to the last pod Running', lambda r: r['seconds_to_all_running'])
    row('pods bound per second', lambda r: r['bound_per_second'])
    row('created → bound p50 / p99 (ms)', lambda r: '%s / %s' % (r['created_to_bound_ms']['p50'], r['created_to_bound_ms']['p99']))
    row('created → Running p50 / p99 (ms)', lambda r: '%s / %s' % (r['created_to_running_ms']['p50'], r['created_to_running_ms']['p99']))
    row('server CPU over the run (s)', lambda r: r['server_cpu_seconds'])
    row('server RSS at the end / peak (MiB)', lambda r: '%s / %s' % (r['server_rss_mib'], r['server_peak_rss_mib']))
    verbs = sorted({v for r in res.values() for v in r.get('client_latency', {})})
    for v in verbs:
        row('%s: requests, p99 ms (scheduler + KCM)' % v,
            lambda r, v=v: '%d, %s' % (r['client_latency'][v]['requests'], r['client_latency'][v]['p99_ms']))


if __name__ == '__main__':
    main()
