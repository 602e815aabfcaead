#!/usr/bin/env python3
"""Fake kubelets for a kubelet-less cluster (a kwok-style stand-in).

    fakenode.py KUBECONFIG [NODE_NAME] [--once] [--nodes N] [--pods P] [--run-pods]

Creates Node NODE_NAME (default ks-fake-node), or with --nodes N the nodes
NODE_NAME-0 … NODE_NAME-(N-1), each with room for P pods (default 0, so
nothing is scheduled onto it), sets their status (Ready=True, the pressure
conditions False) through the status subresource and creates their Leases
in kube-node-lease; then, until killed, renews every Lease each 10 s and
the Ready heartbeat each 60 s, as kubelets would.

With --run-pods it also plays the kubelets' part for pods bound to its
nodes: a bound pod is reported Running and Ready (a Job's pod then
Succeeded, its container exited 0), and a pod being deleted gracefully is
confirmed deleted (grace period 0), so controllers see their pods come
and go. Prints "is up" ("are up" for
--nodes) once every node exists.

Reads the kubeconfig through `kubectl config view --raw`. Talks only to the
server the kubeconfig names (a loopback address here), over one kept-alive
connection per thread.
"""
import argparse
import atexit
import base64
import datetime
import http.client
import itertools
import json
import os
import queue
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

LEASE_INTERVAL = 10
STATUS_INTERVAL = 60
WORKERS = 4


def load_kubeconfig(path):
    raw = subprocess.run(['kubectl', 'config', 'view', '--raw', '--minify', '-o', 'json',
                          '--kubeconfig', path], check=True, stdout=subprocess.PIPE).stdout
    cfg = json.loads(raw)
    cluster = cfg['clusters'][0]['cluster']
    user = cfg['users'][0]['user']
    tmp = tempfile.mkdtemp(prefix='ks-fakenode-')
    atexit.register(shutil.rmtree, tmp, True)
    base = os.path.dirname(os.path.abspath(path))

    def material(data_key, file_key, src, name):
        if src.get(data_key):
            p = os.path.join(tmp, name)
            with open(p, 'wb') as f:
                f.write(base64.b64decode(src[data_key]))
            return p
        if src.get(file_key):
            p = src[file_key]
            return p if os.path.isabs(p) else os.path.join(base, p)
        return None

    ca = material('certificate-authority-data', 'certificate-authority', cluster, 'ca.crt')
    cert = material('client-certificate-data', 'client-certificate', user, 'client.crt')
    key = material('client-key-data', 'client-key', user, 'client.key')
    url = urllib.parse.urlparse(cluster['server'])
    ctx = None
    if url.scheme == 'https':
        ctx = ssl.create_default_context(cafile=ca)
        if cert:
            ctx.load_cert_chain(cert, key)
    return url, ctx, user.get('token')


class Client:
    """One kept-alive connection per thread (a handshake per request would
    cost more than the request)."""

    def __init__(self, kubeconfig):
        self.url, self.ctx, self.token = load_kubeconfig(kubeconfig)
        self.local = threading.local()

    def connect(self, timeout=30):
        if self.url.scheme == 'https':
            return http.client.HTTPSConnection(self.url.hostname, self.url.port or 443,
                                               context=self.ctx, timeout=timeout)
        return http.client.HTTPConnection(self.url.hostname, self.url.port or 80, timeout=timeout)

    def headers(self, body, ctype):
        h = {'Accept': 'application/json'}
        if body is not None:
            h['Content-Type'] = ctype
        if self.token:
            h['Authorization'] = 'Bearer ' + self.token
        return h

    def request(self, method, path, body=None, ctype='application/json'):
        payload = None if body is None else json.dumps(body)
        for attempt in (1, 2):
            conn = getattr(self.local, 'conn', None) or self.connect()
            self.local.conn = conn
            try:
                conn.request(method, self.url.path.rstrip('/') + path, body=payload,
                             headers=self.headers(body, ctype))
                resp = conn.getresponse()
                return resp.status, resp.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise

    def stream(self, path):
        """A watch: yields its events until the server ends it."""
        conn = self.connect(timeout=None)
        try:
            conn.request('GET', self.url.path.rstrip('/') + path, headers=self.headers(None, None))
            resp = conn.getresponse()
            if resp.status != 200:
                raise RuntimeError('watch %s: HTTP %d' % (path, resp.status))
            for line in resp:
                if line.strip():
                    yield json.loads(line)
        finally:
            conn.close()


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def stamp(t=None):
    return (t or now()).strftime('%Y-%m-%dT%H:%M:%SZ')


START = stamp()


def conditions(ts):
    def c(t, status, reason, msg):
        return {'type': t, 'status': status, 'reason': reason, 'message': msg,
                'lastHeartbeatTime': ts, 'lastTransitionTime': START}
    return [
        c('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'fake node'),
        c('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'fake node'),
        c('PIDPressure', 'False', 'KubeletHasSufficientPID', 'fake node'),
        c('Ready', 'True', 'KubeletReady', 'fake node: a harness renews its lease'),
    ]


def node_status(name, pods, ts):
    cpu, memory = ('2', '4Gi') if pods == 0 else ('64', '512Gi')
    res = {'cpu': cpu, 'memory': memory, 'pods': str(pods), 'ephemeral-storage': '100Gi'}
    return {'status': {
        'capacity': res, 'allocatable': res,
        'conditions': conditions(ts),
        'addresses': [{'type': 'InternalIP', 'address': '127.0.0.1'},
                      {'type': 'Hostname', 'address': name}],
        'daemonEndpoints': {'kubeletEndpoint': {'Port': 10250}},
        'nodeInfo': {'architecture': 'amd64', 'operatingSystem': 'linux', 'osImage': 'none',
                     'kernelVersion': '', 'containerRuntimeVersion': 'none://0',
                     'kubeletVersion': 'v1.36.0', 'kubeProxyVersion': '', 'machineID': '',
                     'systemUUID': '', 'bootID': ''},
    }}


def check(what, status, data, ok=(200, 201)):
    if status not in ok:
        raise RuntimeError('%s: HTTP %d: %s' % (what, status, data[:300].decode('utf-8', 'replace')))


LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases'


class Node:
    def __init__(self, name, pods):
        self.name, self.pods, self.uid = name, pods, None

    def ensure(self, cl):
        node = {'apiVersion': 'v1', 'kind': 'Node',
                'metadata': {'name': self.name, 'labels': {
                    'kubernetes.io/hostname': self.name, 'kubernetes.io/os': 'linux',
                    'kubernetes.io/arch': 'amd64', 'node.kubernetes.io/fake': 'true'}},
                'spec': {}}
        st, data = cl.request('POST', '/api/v1/nodes', node)
        check('create node', st, data, (200, 201, 409))
        st, data = cl.request('GET', '/api/v1/nodes/' + self.name)
        if st == 200:
            self.uid = json.loads(data)['metadata'].get('uid')
        self.report(cl)
        self.renew(cl)

    def report(self, cl):
        st, data = cl.request('PATCH', '/api/v1/nodes/%s/status' % self.name,
                              node_status(self.name, self.pods, stamp()),
                              'application/merge-patch+json')
        check('patch node status', st, data)

    def renew(self, cl):
        micro = now().strftime('%Y-%m-%dT%H:%M:%S.%fZ')
        st, data = cl.request('PATCH', LEASES + '/' + self.name, {'spec': {'renewTime': micro}},
                              'application/merge-patch+json')
        if st == 404:
            lease = {'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease',
                     'metadata': {'name': self.name, 'namespace': 'kube-node-lease'},
                     'spec': {'holderIdentity': self.name, 'leaseDurationSeconds': 40,
                              'renewTime': micro}}
            if self.uid:
                lease['metadata']['ownerReferences'] = [
                    {'apiVersion': 'v1', 'kind': 'Node', 'name': self.name, 'uid': self.uid}]
            st, data = cl.request('POST', LEASES, lease)
            if st == 404:  # the namespace itself may not exist yet
                ns = {'apiVersion': 'v1', 'kind': 'Namespace',
                      'metadata': {'name': 'kube-node-lease'}}
                cl.request('POST', '/api/v1/namespaces', ns)
                st, data = cl.request('POST', LEASES, lease)
        check('renew lease', st, data, (200, 201, 409))


def heartbeats(cl, nodes):
    """Renews every lease each LEASE_INTERVAL, spread over the interval,
    and reports node status each STATUS_INTERVAL."""
    last_report = time.monotonic()
    while True:
        start = time.monotonic()
        report = start - last_report >= STATUS_INTERVAL
        for i, n in enumerate(nodes):
            try:
                n.renew(cl)
                if report:
                    n.report(cl)
            except Exception as e:  # keep beating: a server hiccup must not kill the node
                print('%s heartbeat of %s failed: %s' % (now().isoformat(), n.name, e), flush=True)
                try:
                    n.ensure(cl)
                except Exception as e2:
                    print('  re-create failed: %s' % e2, flush=True)
            pause = start + LEASE_INTERVAL * (i + 1) / len(nodes) - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        if report:
            last_report = start


# ---- the kubelets' part for pods ------------------------------------------------

IPS = itertools.count(1)


def pod_ip():
    n = next(IPS)
    return '10.%d.%d.%d' % (64 + (n >> 16) % 64, (n >> 8) % 256, n % 256)


def container_statuses(pod, state, ready):
    out = []
    for c in pod['spec'].get('containers', []):
        out.append({'name': c['name'], 'image': c.get('image', ''), 'imageID': '',
                    'containerID': 'fake://' + pod['metadata']['uid'][:12] + '-' + c['name'],
                    'ready': ready, 'started': ready, 'restartCount': 0, 'state': state})
    return out


def pod_conditions(ready, ts):
    flag = 'True' if ready else 'False'
    return [{'type': t, 'status': s, 'lastProbeTime': None, 'lastTransitionTime': ts}
            for t, s in (('PodReadyToStartContainers', 'True'), ('Initialized', 'True'),
                         ('Ready', flag), ('ContainersReady', flag), ('PodScheduled', 'True'))]


def run_status(pod):
    ts = stamp()
    ip = pod.get('status', {}).get('podIP') or pod_ip()
    return {'status': {
        'phase': 'Running', 'conditions': pod_conditions(True, ts),
        'hostIP': '127.0.0.1', 'hostIPs': [{'ip': '127.0.0.1'}],
        'podIP': ip, 'podIPs': [{'ip': ip}], 'startTime': ts,
        'containerStatuses': container_statuses(pod, {'running': {'startedAt': ts}}, True)}}


def done_status(pod):
    ts = stamp()
    started = pod.get('status', {}).get('startTime', ts)
    state = {'terminated': {'exitCode': 0, 'reason': 'Completed', 'startedAt': started,
                            'finishedAt': ts}}
    return {'status': {'phase': 'Succeeded', 'conditions': pod_conditions(False, ts),
                       'containerStatuses': container_statuses(pod, state, False)}}


def runs_to_completion(pod):
    owners = pod['metadata'].get('ownerReferences') or []
    return any(o.get('kind') == 'Job' for o in owners) or \
        pod['spec'].get('restartPolicy') in ('Never', 'OnFailure') and not owners


def next_step(pod, names):
    """What a kubelet would do next for this pod, if anything."""
    if pod['spec'].get('nodeName') not in names:
        return None
    md, phase = pod['metadata'], pod.get('status', {}).get('phase')
    path = '/api/v1/namespaces/%s/pods/%s' % (md['namespace'], md['name'])
    if md.get('deletionTimestamp'):
        body = {'apiVersion': 'v1', 'kind': 'DeleteOptions', 'gracePeriodSeconds': 0,
                'preconditions': {'uid': md['uid']}}
        return ('DELETE', path, body, 'application/json', (200, 202, 404, 409))
    if phase in (None, 'Pending'):
        return ('PATCH', path + '/status', run_status(pod), 'application/merge-patch+json',
                (200, 404, 409))
    if phase == 'Running' and runs_to_completion(pod):
        return ('PATCH', path + '/status', done_status(pod), 'application/merge-patch+json',
                (200, 404, 409))
    return None


def run_pods(cl, names):
    work = queue.Queue()
    pending = set()
    lock = threading.Lock()

    def worker():
        while True:
            key, step = work.get()
            with lock:
                pending.discard(key)
            method, path, body, ctype, ok = step
            try:
                st, data = cl.request(method, path, body, ctype)
                check('%s %s' % (method, path), st, data, ok)
            except Exception as e:
                print('%s %s' % (now().isoformat(), e), flush=True)

    for _ in range(WORKERS):
        threading.Thread(target=worker, daemon=True).start()

    def handle(pod):
        step = next_step(pod, names)
        if step is None:
            return
        key = (pod['metadata']['uid'], step[0], step[2] and json.dumps(step[2].get('status', {}).get('phase')))
        with lock:
            if key in pending:
                return
            pending.add(key)
        work.put((key, step))

    rv = None
    while True:
        try:
            if rv is None:
                st, data = cl.request('GET', '/api/v1/pods')
                check('list pods', st, data)
                listed = json.loads(data)
                for pod in listed.get('items', []):
                    handle(pod)
                rv = listed['metadata']['resourceVersion']
            for ev in cl.stream('/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=' + rv):
                obj = ev.get('object', {})
                if ev.get('type') == 'ERROR':
                    rv = None
                    break
                rv = obj.get('metadata', {}).get('resourceVersion', rv)
                if ev.get('type') in ('ADDED', 'MODIFIED'):
                    handle(obj)
        except Exception as e:
            print('%s pod watch: %s' % (now().isoformat(), e), flush=True)
            time.sleep(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('kubeconfig')
    ap.add_argument('name', nargs='?', default='ks-fake-node')
    ap.add_argument('--once', action='store_true')
    ap.add_argument('--nodes', type=int, default=0)
    ap.add_argument('--pods', type=int, default=0)
    ap.add_argument('--run-pods', action='store_true')
    a = ap.parse_args()
    names = ['%s-%d' % (a.name, i) for i in range(a.nodes)] if a.nodes else [a.name]
    cl = Client(a.kubeconfig)
    nodes = [Node(n, a.pods) for n in names]
    for n in nodes:
        n.ensure(cl)
    if a.nodes:
        print('%d fake nodes (%s-0 ...) are up' % (a.nodes, a.name), flush=True)
    else:
        print('fake node %s is up' % a.name, flush=True)
    if a.once:
        return
    if a.run_pods:
        threading.Thread(target=run_pods, args=(cl, set(names)), daemon=True).start()
    heartbeats(cl, nodes)


if __name__ == '__main__':
    main()
