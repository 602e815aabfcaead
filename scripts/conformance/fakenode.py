#!/usr/bin/env python3
"""Keeps one fake, Ready node alive for a kubelet-less cluster.

    fakenode.py KUBECONFIG [NODE_NAME] [--once]

Creates Node NODE_NAME (default ks-fake-node) with zero pod capacity (so
nothing is ever scheduled onto it; no kubelet exists to run it), sets its
status (Ready=True, the pressure conditions False) through the status
subresource, creates its Lease in kube-node-lease, and then every 10 s
renews the Lease and the Ready condition's heartbeat, as a kubelet would,
until killed. Reads the kubeconfig through `kubectl config view --raw`.
Talks only to the server the kubeconfig names (a loopback address here).
"""
import base64
import datetime
import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse

INTERVAL = 10


def load_kubeconfig(path):
    raw = subprocess.run(['kubectl', 'config', 'view', '--raw', '--minify', '-o', 'json',
                          '--kubeconfig', path], check=True, stdout=subprocess.PIPE).stdout
    cfg = json.loads(raw)
    cluster = cfg['clusters'][0]['cluster']
    user = cfg['users'][0]['user']
    tmp = tempfile.mkdtemp(prefix='ks-fakenode-')
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
    def __init__(self, kubeconfig):
        self.url, self.ctx, self.token = load_kubeconfig(kubeconfig)

    def request(self, method, path, body=None, ctype='application/json'):
        if self.url.scheme == 'https':
            conn = http.client.HTTPSConnection(self.url.hostname, self.url.port or 443, context=self.ctx, timeout=30)
        else:
            conn = http.client.HTTPConnection(self.url.hostname, self.url.port or 80, timeout=30)
        headers = {'Accept': 'application/json'}
        if body is not None:
            headers['Content-Type'] = ctype
            body = json.dumps(body)
        if self.token:
            headers['Authorization'] = 'Bearer ' + self.token
        try:
            conn.request(method, self.url.path.rstrip('/') + path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        return resp.status, data


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def conditions(ts):
    def c(t, status, reason, msg):
        return {'type': t, 'status': status, 'reason': reason, 'message': msg,
                'lastHeartbeatTime': ts, 'lastTransitionTime': START}
    return [
        c('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'fake node'),
        c('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'fake node'),
        c('PIDPressure', 'False', 'KubeletHasSufficientPID', 'fake node'),
        c('Ready', 'True', 'KubeletReady', 'fake node: a conformance harness renews its lease'),
    ]


START = now().strftime('%Y-%m-%dT%H:%M:%SZ')


def node_status(ts):
    res = {'cpu': '2', 'memory': '4Gi', 'pods': '0', 'ephemeral-storage': '10Gi'}
    return {'status': {
        'capacity': res, 'allocatable': res,
        'conditions': conditions(ts),
        'addresses': [{'type': 'InternalIP', 'address': '127.0.0.1'},
                      {'type': 'Hostname', 'address': NAME}],
        'daemonEndpoints': {'kubeletEndpoint': {'Port': 10250}},
        'nodeInfo': {'architecture': 'amd64', 'operatingSystem': 'linux', 'osImage': 'none',
                     'kernelVersion': '', 'containerRuntimeVersion': 'none://0',
                     'kubeletVersion': 'v1.36.0', 'kubeProxyVersion': '', 'machineID': '',
                     'systemUUID': '', 'bootID': ''},
    }}


def check(what, status, data, ok=(200, 201)):
    if status not in ok:
        raise RuntimeError('%s: HTTP %d: %s' % (what, status, data[:300].decode('utf-8', 'replace')))


def ensure(cl):
    node = {'apiVersion': 'v1', 'kind': 'Node',
            'metadata': {'name': NAME, 'labels': {
                'kubernetes.io/hostname': NAME, 'kubernetes.io/os': 'linux',
                'kubernetes.io/arch': 'amd64', 'node.kubernetes.io/fake': 'true'}},
            'spec': {}}
    st, data = cl.request('POST', '/api/v1/nodes', node)
    check('create node', st, data, (200, 201, 409))
    global UID
    st, data = cl.request('GET', '/api/v1/nodes/' + NAME)
    if st == 200:
        UID = json.loads(data)['metadata'].get('uid')
    beat(cl)


def beat(cl):
    t = now()
    ts = t.strftime('%Y-%m-%dT%H:%M:%SZ')
    st, data = cl.request('PATCH', '/api/v1/nodes/%s/status' % NAME, node_status(ts),
                          'application/merge-patch+json')
    check('patch node status', st, data)
    micro = t.strftime('%Y-%m-%dT%H:%M:%S.%fZ')
    lease_path = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases'
    st, data = cl.request('PATCH', lease_path + '/' + NAME, {'spec': {'renewTime': micro}},
                          'application/merge-patch+json')
    if st == 404:
        lease = {'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease',
                 'metadata': {'name': NAME, 'namespace': 'kube-node-lease'},
                 'spec': {'holderIdentity': NAME, 'leaseDurationSeconds': 40, 'renewTime': micro}}
        if UID:
            lease['metadata']['ownerReferences'] = [{'apiVersion': 'v1', 'kind': 'Node', 'name': NAME, 'uid': UID}]
        st, data = cl.request('POST', lease_path, lease)
        if st == 404:  # the namespace itself may not exist yet
            ns = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'kube-node-lease'}}
            cl.request('POST', '/api/v1/namespaces', ns)
            st, data = cl.request('POST', lease_path, lease)
    check('renew lease', st, data, (200, 201, 409))


def main():
    global NAME, UID
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    once = '--once' in sys.argv
    NAME = args[1] if len(args) > 1 else 'ks-fake-node'
    UID = None
    cl = Client(args[0])
    ensure(cl)
    print('fake node %s is up' % NAME, flush=True)
    if once:
        return
    while True:
        time.sleep(INTERVAL)
        try:
            beat(cl)
        except Exception as e:  # keep beating: a server hiccup must not kill the node
            print('%s heartbeat failed: %s' % (now().isoformat(), e), flush=True)
            try:
                ensure(cl)
            except Exception as e2:
                print('  re-create failed: %s' % e2, flush=True)


if __name__ == '__main__':
    main()
