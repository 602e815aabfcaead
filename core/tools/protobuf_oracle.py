#!/usr/bin/env python3
"""Asks a real Go client which zero values its JSON encoding drops, and
records Go-made (protobuf, JSON) pairs as decoder test fixtures.

Why: Go's protobuf encoding writes every non-pointer field even when it is
zero, but its JSON encoding drops zero `omitempty` fields. Whether a field
is a pointer is not in generated.proto, so the decoder cannot tell
`uid: ""` (drop) from `replicas: 0` (keep) by itself. kubectl can: this
script serves it protobuf responses from a loopback fake API server and
reads back the JSON it prints (`kubectl create ... -o json` decodes the
server's protobuf reply into Go structs and json.Marshal's them).

Three passes per kind kubectl can create:
  1. every field set to a distinct non-zero value: fields missing from the
     JSON are unknown to this kubectl (newer than it) and are left alone;
  2. every field present with its zero value: a known scalar field missing
     from the JSON is `omitempty` + non-pointer -> protobuf_go_zero.txt;
  3. pass 1 again without the unknown fields -> core/src/protobuf/testdata.

Needs kubectl (1.32 was used) on PATH; talks only to 127.0.0.1. Then run
gen_protobuf_schema.py to fold protobuf_go_zero.txt into the table:

    python3 core/tools/protobuf_oracle.py && python3 core/tools/gen_protobuf_schema.py
"""

import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading

sys.dont_write_bytecode = True  # keep core/tools free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_protobuf_schema as gen  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.join(HERE, "..", "src", "protobuf", "testdata")
PORT = 18097
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAX_DEPTH = 14

# (module, kind, kubectl arguments, fixture name or None)
COMMANDS = [
    ("api.core.v1", "Namespace", ["create", "namespace", "x"], "namespace"),
    ("api.core.v1", "ConfigMap", ["create", "configmap", "x"], "configmap"),
    ("api.core.v1", "Secret", ["create", "secret", "generic", "x"], "secret"),
    ("api.core.v1", "ServiceAccount", ["create", "serviceaccount", "x"], "serviceaccount"),
    ("api.core.v1", "Service", ["create", "service", "clusterip", "x", "--tcp=80"], "service"),
    ("api.apps.v1", "Deployment", ["create", "deployment", "x", "--image=i"], "deployment"),
    ("api.batch.v1", "Job", ["create", "job", "x", "--image=i"], None),
    ("api.batch.v1", "CronJob", ["create", "cronjob", "x", "--image=i", "--schedule=* * * * *"],
     "cronjob"),
    ("api.rbac.v1", "ClusterRole", ["create", "clusterrole", "x", "--verb=get",
                                    "--non-resource-url=/x"], "clusterrole"),
    ("api.rbac.v1", "RoleBinding", ["create", "rolebinding", "x", "--clusterrole=y", "--user=u"],
     "rolebinding"),
    ("api.rbac.v1", "ClusterRoleBinding", ["create", "clusterrolebinding", "x", "--clusterrole=y",
                                           "--user=u"], None),
    ("api.authentication.v1", "TokenRequest", ["create", "token", "x"], "tokenrequest"),
    ("api.authentication.v1", "SelfSubjectReview", ["auth", "whoami"], "selfsubjectreview"),
    ("api.core.v1", "EventList", ["events"], "eventlist"),
]


# kubectl refuses an answer without these, so they stay set in the zero pass.
NEVER_ZERO = {"api.authentication.v1.TokenRequestStatus.token"}
# A continue token would make `kubectl events` page forever.
NEVER_SET = {"apimachinery.pkg.apis.meta.v1.ListMeta.continue"}


# ---- protobuf encoding -------------------------------------------------

def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(tag, wt):
    return varint(tag << 3 | wt)


def ld(tag, payload):
    return key(tag, 2) + varint(len(payload)) + payload


class Filler:
    """Builds message bodies: `zero` puts every field on the wire with its
    zero value; otherwise every value is distinct and non-zero."""

    def __init__(self, messages, zero, skip=frozenset()):
        self.messages, self.zero, self.skip, self.n = messages, zero, skip, 0
        self.base_zero = zero

    def next(self):
        self.n += 1
        return self.n

    def scalar(self, kind, tag):
        if kind == "string":
            return ld(tag, b"" if self.zero else f"s{self.next()}".encode())
        if kind == "bytes":
            return ld(tag, b"" if self.zero else f"b{self.next()}".encode())
        if kind == "bool":
            return key(tag, 0) + varint(0 if self.zero else 1)
        if kind in ("int32", "int64"):
            return key(tag, 0) + varint(0 if self.zero else self.next())
        if kind == "double":
            import struct
            return key(tag, 1) + struct.pack("<d", 0.0 if self.zero else self.next() + 0.5)
        raise ValueError(kind)

    def special(self, name, tag):
        kind = gen.SPECIAL[name]
        n = self.next()
        if kind in ("Time", "MicroTime"):
            body = b"" if self.zero else key(1, 0) + varint(1_700_000_000 + n) + (
                key(2, 0) + varint(123_456_789) if kind == "MicroTime" else b"")
        elif kind == "IntOrString":
            body = b"" if self.zero else (key(2, 0) + varint(n) if n % 2 else
                                          key(1, 0) + varint(1) + ld(3, f"p{n}".encode()))
        elif kind == "Quantity":
            body = ld(1, b"0" if self.zero else f"{n}Mi".encode())
        elif kind == "FieldsV1":
            body = ld(1, b'{"f:metadata":{}}')
        elif kind == "Duration":
            body = key(1, 0) + varint(0 if self.zero else n * 1_000_000_000)
        else:  # RawExtension
            body = ld(1, json.dumps({"n": n}).encode())
        return ld(tag, body)

    def value(self, f, depth, path):
        if f["kind"] != "message":
            return self.scalar(f["kind"], f["tag"])
        if f["ref"] in gen.SPECIAL:
            return self.special(f["ref"], f["tag"])
        return ld(f["tag"], self.message(f["ref"], depth + 1, path))

    def message(self, name, depth=0, path=()):
        if depth > MAX_DEPTH or name in path:
            return b""
        path = path + (name,)
        out = b""
        for f in sorted(self.messages[name]["fields"], key=lambda f: f["tag"]):
            if f"{name}.{f['json']}" in self.skip | NEVER_SET:
                continue
            if f["card"] == "Map":
                entry_val = dict(f, tag=2, card="One")
                for i in range(1 if self.zero else 2):
                    k = ld(1, f"k{self.next()}".encode())
                    out += ld(f["tag"], k + self.value(entry_val, depth, path))
            elif f["card"] == "Rep":
                for _ in range(1 if self.zero else 2):
                    out += self.value(f, depth, path)
            elif f"{name}.{f['json']}" in NEVER_ZERO:
                self.zero = False
                out += self.value(f, depth, path)
                self.zero = self.base_zero
            else:
                out += self.value(f, depth, path)
        return out


def envelope(api_version, kind, raw):
    type_meta = ld(1, api_version.encode()) + ld(2, kind.encode())
    return b"k8s\x00" + ld(1, type_meta) + ld(2, raw)


# ---- fake API server and kubectl ------------------------------------------

class Server(http.server.BaseHTTPRequestHandler):
    body = b""
    captured = None

    def do_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        sent = self.rfile.read(length)
        if self.command == "POST" and self.headers.get("Content-Type") == CONTENT_TYPE:
            Server.captured = sent
        path = self.path.split("?")[0]
        if self.command == "GET" and path in ("/api", "/apis", "/version"):
            doc = {"/api": {"kind": "APIVersions", "versions": ["v1"]},
                   "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
                   "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0"}}[path]
            self.reply(200, "application/json", json.dumps(doc).encode())
        else:
            self.reply(201 if self.command == "POST" else 200, CONTENT_TYPE, Server.body)

    def reply(self, code, ctype, data):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_any

    def log_message(self, *args):
        pass


def kubectl(args, body, kubeconfig):
    Server.body = body
    out = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args, "-o", "json",
                          "--show-managed-fields"] if args[0] == "create" else
                         ["kubectl", "--kubeconfig", kubeconfig, *args, "-o", "json"],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def write_json(path, value):
    with open(path, "w") as fh:
        json.dump(value, fh, sort_keys=True, separators=(",", ":"))
        fh.write("\n")


# Real request bodies: what kubectl sends, next to what it would send as JSON.
REQUESTS = [
    ("namespace", ["create", "namespace", "demo"]),
    ("configmap", ["create", "configmap", "cm", "--from-literal=a=1", "--from-literal=empty=",
                   "--from-file=bin={tmp}/bin"]),
    ("secret", ["create", "secret", "generic", "s", "--from-literal=user=admin",
                "--from-literal=pass=s3cr3t"]),
    ("deployment", ["create", "deployment", "web", "--image=nginx", "--replicas=0", "--port=80"]),
    ("serviceaccount", ["create", "serviceaccount", "sa"]),
    ("service", ["create", "service", "clusterip", "svc", "--tcp=80:8080"]),
]


def capture_requests(kubeconfig, tmp):
    with open(os.path.join(tmp, "bin"), "wb") as fh:
        fh.write(b"\xff\xfe\x00binary")
    Server.body = b""
    for name, args in REQUESTS:
        args = [a.replace("{tmp}", tmp) for a in args]
        Server.captured = None
        subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], capture_output=True,
                       timeout=60)
        if Server.captured is None:
            sys.exit(f"kubectl {' '.join(args)} sent no protobuf body")
        body = Server.captured
        want = kubectl(args + ["--dry-run=client"], b"", kubeconfig)
        with open(os.path.join(TESTDATA, f"request_{name}.pb"), "wb") as fh:
            fh.write(body)
        write_json(os.path.join(TESTDATA, f"request_{name}.json"), want)
    # `auth can-i` has no dry run; its JSON form follows from the Go types.
    Server.captured = None
    subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "auth", "can-i", "get", "/logs"],
                   capture_output=True, timeout=60)
    with open(os.path.join(TESTDATA, "request_ssar.pb"), "wb") as fh:
        fh.write(Server.captured)


# ---- reading the answers ----------------------------------------------------

def walk(messages, name, obj, visit, depth=0, path=()):
    """Calls visit(message, field, present) for every field of every object
    in the JSON that corresponds to message `name`."""
    if depth > MAX_DEPTH or name in path or not isinstance(obj, dict):
        return
    path = path + (name,)
    for f in messages[name]["fields"]:
        sub = f["ref"] if f["kind"] == "message" and f["ref"] not in gen.SPECIAL else None
        if f["card"] == "Inline":
            walk(messages, sub, obj, visit, depth + 1, path)
            continue
        visit(name, f, f["json"] in obj)
        if sub and f["card"] == "One":
            walk(messages, sub, obj.get(f["json"]), visit, depth + 1, path)
        elif sub and f["card"] in ("Rep", "Map"):
            items = obj.get(f["json"]) or []
            for item in (items.values() if isinstance(items, dict) else items):
                walk(messages, sub, item, visit, depth + 1, path)


def main():
    messages, _order, resources, _ = gen.load_schema()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = os.path.join(tmp, "config")
        with open(kubeconfig, "w") as fh:
            fh.write(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{PORT}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u, namespace: default}}}}]
current-context: c
""")
        server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        unknown, omitted, kept = set(), set(), set()
        results = []
        for module, kind, args, fixture in COMMANDS:
            name = f"{module}.{kind}"
            item_kind = kind[:-4] if kind.endswith("List") else kind
            api_version = resources.get(f"{module}.{item_kind}") or next(
                v for n, v in resources.items() if n.rsplit(".", 1)[0] == module)

            def run(filler):
                return kubectl(args, envelope(api_version, kind, filler.message(name)), kubeconfig)

            walk(messages, name, run(Filler(messages, zero=False)),
                 lambda m, f, present: None if present else unknown.add(f"{m}.{f['json']}"))

            def zero_visit(m, f, present):
                k = f"{m}.{f['json']}"
                if k in unknown or f["card"] != "One" or (
                        f["kind"] == "message" and f["ref"] not in gen.SPECIAL):
                    return
                (kept if present else omitted).add(k)
            walk(messages, name, run(Filler(messages, zero=True)), zero_visit)
            results.append((name, api_version, kind, fixture))
        conflicts = omitted & kept
        if conflicts:
            print(f"warning: inconsistent answers for {sorted(conflicts)}", file=sys.stderr)
        with open(gen.GO_ZERO, "w") as fh:
            fh.write("# Fields whose zero value Go's JSON encoding omits (omitempty on a\n"
                     "# non-pointer field), as observed by core/tools/protobuf_oracle.py.\n"
                     "# Generated; re-run the oracle rather than editing.\n")
            for k in sorted(omitted - conflicts):
                fh.write(k + "\n")
        os.makedirs(TESTDATA, exist_ok=True)
        for name, api_version, kind, fixture in results:
            if not fixture:
                continue
            cmd = next(c for c in COMMANDS if c[3] == fixture)[2]
            body = envelope(api_version, kind, Filler(messages, zero=False, skip=unknown).message(name))
            Server.body = body
            want = kubectl(cmd, body, kubeconfig)
            with open(os.path.join(TESTDATA, fixture + ".pb"), "wb") as fh:
                fh.write(body)
            write_json(os.path.join(TESTDATA, fixture + ".json"), want)
        capture_requests(kubeconfig, tmp)
        server.shutdown()
        print(f"{len(omitted - conflicts)} omit-when-zero fields, {len(kept)} kept, "
              f"{len(unknown)} unknown to kubectl", file=sys.stderr)
        for k in sorted(unknown):
            print("  unknown to kubectl:", k, file=sys.stderr)


if __name__ == "__main__":
    main()
