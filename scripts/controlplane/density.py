#!/usr/bin/env python3
"""Pod density run against a control plane that has a scheduler, a
controller-manager and fake kubelets (scripts/controlplane.sh --density).

    density.py KUBECONFIG --pods N [--deployments D] [--timeout SECS]

Creates D Deployments (in namespace "density") whose replicas add up to
N pods, and watches every pod from before the first create: when it is
first seen (created by the ReplicaSet controller), bound (spec.nodeName
set by the scheduler) and Running (the fake kubelet's status). Prints one
JSON object: pods, seconds from the first Deployment to the last pod
Running, pods bound per second over the binding window, and p50/p99 of
created→bound and created→Running per pod. Times are this process's
monotonic clock, taken when each event arrives.
"""
import argparse
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'conformance'))
from fakenode import Client, check  # noqa: E402

NS = 'density'


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('kubeconfig')
    ap.add_argument('--pods', type=int, required=True)
    ap.add_argument('--deployments', type=int, default=10)
    ap.add_argument('--timeout', type=int, default=900)
    a = ap.parse_args()
    cl = Client(a.kubeconfig)
    st, data = cl.request('POST', '/api/v1/namespaces',
                          {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': NS}})
    check('create namespace', st, data, (201, 409))
    for _ in range(120):  # pods need the namespace's default ServiceAccount
        if cl.request('GET', '/api/v1/namespaces/%s/serviceaccounts/default' % NS)[0] == 200:
            break
        time.sleep(0.5)
    seen, bound, running = {}, {}, {}
    lock = threading.Lock()
    ready = threading.Event()
    done = threading.Event()

    def watch():
        st, data = cl.request('GET', '/api/v1/namespaces/%s/pods' % NS)
        check('list pods', st, data)
        rv = json.loads(data)['metadata']['resourceVersion']
        ready.set()
        while not done.is_set():
            try:
                path = '/api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s' % (NS, rv)
                for ev in cl.stream(path):
                    now = time.monotonic()
                    obj = ev.get('object', {})
                    md = obj.get('metadata', {})
                    rv = md.get('resourceVersion', rv)
                    if ev.get('type') not in ('ADDED', 'MODIFIED'):
                        continue
                    uid = md.get('uid')
                    with lock:
                        seen.setdefault(uid, now)
                        if obj.get('spec', {}).get('nodeName'):
                            bound.setdefault(uid, now)
                        if obj.get('status', {}).get('phase') == 'Running':
                            running.setdefault(uid, now)
                        if len(running) >= a.pods:
                            done.set()
                            return
            except Exception as e:  # a watch ends; resume from the last revision
                print('watch: %s' % e, file=sys.stderr)
                time.sleep(0.2)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    ready.wait(30)
    per = [a.pods // a.deployments + (1 if i < a.pods % a.deployments else 0)
           for i in range(a.deployments)]
    start = time.monotonic()
    for i, replicas in enumerate(per):
        labels = {'app': 'density-%d' % i}
        dep = {'apiVersion': 'apps/v1', 'kind': 'Deployment',
               'metadata': {'name': 'density-%d' % i, 'namespace': NS},
               'spec': {'replicas': replicas, 'selector': {'matchLabels': labels},
                        'template': {'metadata': {'labels': labels},
                                     'spec': {'containers': [{'name': 'c', 'image': 'registry.k8s.io/pause:3.10'}]}}}}
        st, data = cl.request('POST', '/apis/apps/v1/namespaces/%s/deployments' % NS, dep)
        check('create deployment', st, data, (201,))
    done.wait(a.timeout)
    with lock:
        s_, b_, r_ = dict(seen), dict(bound), dict(running)
    to_bind = [b_[u] - s_[u] for u in b_ if u in s_]
    to_run = [r_[u] - s_[u] for u in r_ if u in s_]
    window = (max(b_.values()) - min(s_.values())) if b_ else None
    out = {
        'pods': a.pods, 'deployments': a.deployments,
        'created': len(s_), 'bound': len(b_), 'running': len(r_),
        'complete': len(r_) >= a.pods,
        'seconds_to_all_running': round(max(r_.values()) - start, 2) if r_ else None,
        'bound_per_second': round(len(b_) / window, 1) if window else None,
        'created_to_bound_ms': {'p50': round(1000 * pct(to_bind, 50), 1), 'p99': round(1000 * pct(to_bind, 99), 1)} if to_bind else None,
        'created_to_running_ms': {'p50': round(1000 * pct(to_run, 50), 1), 'p99': round(1000 * pct(to_run, 99), 1)} if to_run else None,
    }
    print(json.dumps(out))


if __name__ == '__main__':
    main()
