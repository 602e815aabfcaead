#!/usr/bin/env python3
"""Custom resources against ConfigMaps, and the cost of many CRDs.

    bench/scripts/crd.py compare BIN OUT_DIR   (ROUNDS=3 SECS=8 WORKLOADS="create get list watch" A_FIELDS=0|1)
    bench/scripts/crd.py scale BIN OUT_DIR     (CRDS=1000)
    bench/scripts/crd.py callgrind BIN OUT_DIR (N=1000)

compare: one server (memory storage, 2 shards); a CRD whose schema has 50
properties and 3 CEL rules; `kubeshard-bench compare` with A = ConfigMaps
and B = the custom resources (--b-resource/--b-template), objects of the
same JSON size (SIZE, default 1024: the ConfigMap's payload; the
Widget's 50-field spec plus a smaller payload), interleaved rounds,
medians of B/A.
callgrind: instructions per create of a Widget and of a ConfigMap with
the Widget's 50 values as data keys (and the same size), the server (one
shard) under valgrind: N and 3N creates, the difference over 2N.
scale: CRDS CRDs created one after another (each a small schema with
printer columns); time from create to Established, discovery and OpenAPI
latency and server RSS before and after.
All on loopback ports; the server is stopped at the end.
"""
import json, os, socket, subprocess, sys, tempfile, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def start(binary, out, name, extra=()):
    p = port()
    data = tempfile.mkdtemp()
    log = open(os.path.join(out, name + ".log"), "w")
    proc = subprocess.Popen([binary, "--insecure-port", str(p), "--secure-port", "0", "--bind-address", "127.0.0.1",
                             "--shards", "2", "--data-dir", data, "--storage", "memory", *extra], stdout=log, stderr=log)
    url = f"http://127.0.0.1:{p}"
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "/readyz").read(); return proc, url
        except Exception:
            time.sleep(0.1)
    raise SystemExit(f"{name} did not start")


def call(url, method="GET", body=None):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"null")


def established(url, name, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        c = call(f"{url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        if any(x["type"] == "Established" and x["status"] == "True" for x in c.get("status", {}).get("conditions", [])):
            return
        time.sleep(0.001)
    raise SystemExit(f"{name} not established")


def rich_crd(group="bench.example.com", plural="widgets", kind="Widget"):
    props = {}
    for i in range(50):
        props[f"p{i}"] = [{"type": "string", "maxLength": 64}, {"type": "integer", "minimum": 0, "maximum": 1000000},
                          {"type": "boolean"}, {"type": "string", "enum": ["a", "b", "c"]}][i % 4]
    rules = [{"rule": "self.p1 <= self.p5 + 1000000", "message": "p1 too large"},
             {"rule": "self.p0.size() < 64", "message": "p0 too long"},
             {"rule": "self.p3 in ['a', 'b', 'c']", "message": "p3 not known"}]
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": props, "x-kubernetes-validations": rules}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced", "names": {"plural": plural, "kind": kind},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}]}}


def rich_object():
    spec = {}
    for i in range(50):
        spec[f"p{i}"] = ["value-%d" % i, i * 10, i % 2 == 0, "abc"[i % 3]][i % 4]
    return {"apiVersion": "bench.example.com/v1", "kind": "Widget", "metadata": {}, "spec": spec}


def compare(binary, out):
    rounds, secs = os.environ.get("ROUNDS", "3"), os.environ.get("SECS", "8")
    workloads = os.environ.get("WORKLOADS", "create get list watch").split()
    bench = os.path.join(ROOT, "target/release/kubeshard-bench")
    template = os.path.join(out, "widget.json")
    json.dump(rich_object(), open(template, "w"))
    # Objects of the same size: the Widget's payload (an annotation) is
    # the ConfigMap's less what its 50-field spec takes.
    size = int(os.environ.get("SIZE", "1024"))
    b_size = max(0, size - len(json.dumps(rich_object()["spec"], separators=(",", ":"))))
    # A_FIELDS=1: the ConfigMaps carry the Widget's 50 values as 50 data
    # keys plus the same payload, so both kinds have as many fields for
    # the client to parse and the server to decode, own and encode; what
    # differs is the CRD's own work (schema, CEL rules).
    a_args = ["--object-size", str(size)]
    if os.environ.get("A_FIELDS") == "1":
        a_template = os.path.join(out, "configmap50.json")
        data = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in rich_object()["spec"].items()}
        json.dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}, "data": data}, open(a_template, "w"))
        a_args = ["--object-size", str(b_size), "--template", a_template]
    summary = open(os.path.join(out, "summary.txt"), "a")
    for w in workloads:
        proc, url = start(binary, out, w)
        try:
            call(url + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "POST", rich_crd())
            established(url, "widgets.bench.example.com")
            args = {"create": (["--concurrency", "64"], ["create"]),
                    "get": (["--concurrency", "64"], ["get", "--objects", "100"]),
                    "list": (["--concurrency", "4"], ["list", "--objects", "10000"]),
                    "watch": (["--rate", "200", "--http2", "--connections", "16"], ["watch", "--watchers", "10000", "--objects", "100"])}[w]
            cmd = [bench, "--duration", secs + "s", "--output", os.path.join(out, w + ".json"), "--quiet",
                   *a_args, *args[0],
                   "compare", "--a", url, "--b", url, "--rounds", rounds,
                   "--a-pid", str(proc.pid), "--b-pid", str(proc.pid),
                   "--b-resource", "/apis/bench.example.com/v1/namespaces/default/widgets", "--b-kind", "Widget",
                   "--b-template", template, "--b-object-size", str(b_size), *args[1]]
            res = subprocess.run(cmd, capture_output=True, text=True)
            text = f"== {w} (A ConfigMaps, B Widgets)\n{res.stdout}{res.stderr}{server_cpu(os.path.join(out, w + '.json'))}"
            print(text); summary.write(text); summary.flush()
        finally:
            proc.terminate(); proc.wait()


def server_cpu(path):
    """The server's CPU time per operation, A and B, median over rounds:
    the client shares the cores and parses every object it lists or
    watches, so wall-clock throughput charges the server for the
    client's work too."""
    try:
        rounds = json.load(open(path))["rounds"]
    except Exception:
        return ""
    def per_op(run):
        ops = run["operations"]
        primary = next((o for o in ops if o["name"] == run["primary"]), ops[0])
        n = primary["ok"] or 1
        if "events_delivered" in run.get("extra", {}):
            n = run["extra"]["events_delivered"] or 1
        return run["server"]["cpu_seconds"] * 1e6 / n
    a = sorted(per_op(r["a"]) for r in rounds)
    b = sorted(per_op(r["b"]) for r in rounds)
    ratios = sorted(per_op(r["b"]) / per_op(r["a"]) for r in rounds)
    mid = len(rounds) // 2
    return f"server CPU per op: A {a[mid]:.1f} µs, B {b[mid]:.1f} µs, B/A median ×{ratios[mid]:.3f}\n"


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])


def timed(url, path, accept=None, n=5):
    times = []
    for _ in range(n):
        req = urllib.request.Request(url + path, headers={"Accept": accept} if accept else {})
        t = time.perf_counter(); body = urllib.request.urlopen(req).read(); times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2] * 1000, len(body)


def scale(binary, out):
    n = int(os.environ.get("CRDS", "1000"))
    proc, url = start(binary, out, "scale")
    lines = []
    try:
        time.sleep(1)
        before = rss_kib(proc.pid)
        probes = [("/apis", None), ("/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"),
                  ("/openapi/v2", None), ("/openapi/v3", None)]
        base = {p + (a or ""): timed(url, p, a) for p, a in probes}
        waits = []
        for i in range(n):
            crd = rich_crd(group=f"g{i}.bench.example.com", plural="things", kind="Thing")
            crd["spec"]["versions"][0]["additionalPrinterColumns"] = [{"name": "P0", "type": "string", "jsonPath": ".spec.p0"}]
            t = time.perf_counter()
            call(url + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "POST", crd)
            established(url, f"things.g{i}.bench.example.com")
            waits.append((time.perf_counter() - t) * 1000)
        time.sleep(2)
        after = rss_kib(proc.pid)
        waits.sort()
        lines.append(f"{n} CRDs; create→Established ms: p50 {waits[len(waits)//2]:.1f} p90 {waits[int(len(waits)*0.9)]:.1f} max {waits[-1]:.1f}")
        lines.append(f"RSS {before} KiB → {after} KiB: {(after - before) / n:.1f} KiB per CRD")
        for p, a in probes:
            (t0, b0), (t1, b1) = base[p + (a or "")], timed(url, p, a)
            lines.append(f"GET {p}{' (aggregated)' if a else ''}: {t0:.2f} ms ({b0} B) → {t1:.2f} ms ({b1} B) with {n} CRDs")
        # One group version's OpenAPI (what kubectl explain fetches).
        t, size = timed(url, "/openapi/v3/apis/g0.bench.example.com/v1")
        lines.append(f"GET /openapi/v3/apis/g0.bench.example.com/v1: {t:.2f} ms ({size} B)")
    finally:
        proc.terminate(); proc.wait()
    text = "\n".join(lines)
    print(text)
    open(os.path.join(out, "scale.txt"), "w").write(text + "\n")


def callgrind(binary, out):
    n = int(os.environ.get("N", "1000"))
    bench = os.path.join(ROOT, "target/release/kubeshard-bench")
    size = int(os.environ.get("SIZE", "1024"))
    b_size = max(0, size - len(json.dumps(rich_object()["spec"], separators=(",", ":"))))
    widget = os.path.join(out, "widget.json")
    json.dump(rich_object(), open(widget, "w"))
    configmap = os.path.join(out, "configmap50.json")
    data = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in rich_object()["spec"].items()}
    json.dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}, "data": data}, open(configmap, "w"))
    kinds = {"widget": ["--resource", "/apis/bench.example.com/v1/namespaces/default/widgets", "--kind", "Widget",
                        "--template", widget],
             "configmap": ["--template", configmap]}

    def total(kind, count):
        p = port()
        data_dir = tempfile.mkdtemp()
        profile = os.path.join(out, f"callgrind.{kind}.{count}")
        log = open(profile + ".log", "w")
        proc = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={profile}", binary,
                                 "--insecure-port", str(p), "--secure-port", "0", "--bind-address", "127.0.0.1",
                                 "--shards", "1", "--storage", "memory", "--data-dir", data_dir], stdout=log, stderr=log)
        url = f"http://127.0.0.1:{p}"
        for _ in range(1200):
            try:
                urllib.request.urlopen(url + "/readyz").read(); break
            except Exception:
                time.sleep(0.25)
        call(url + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "POST", rich_crd())
        established(url, "widgets.bench.example.com", timeout=120)
        subprocess.run([bench, "--url", url, "--quiet", "--count", str(count), "--concurrency", "16",
                        "--object-size", str(b_size), *kinds[kind], "create"], check=True, capture_output=True)
        proc.send_signal(2); proc.wait()
        ann = subprocess.run(["callgrind_annotate", profile], capture_output=True, text=True).stdout
        for line in ann.splitlines():
            if "PROGRAM TOTALS" in line:
                return int(line.split()[0].replace(",", ""))
        raise SystemExit(f"no totals for {kind}")

    lines = []
    for kind in kinds:
        a, b = total(kind, n), total(kind, 3 * n)
        lines.append(f"{kind}: {(b - a) // (2 * n)} instructions per create")
    text = "\n".join(lines)
    print(text)
    open(os.path.join(out, "callgrind.txt"), "w").write(text + "\n")


if __name__ == "__main__":
    mode, binary, out = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    os.makedirs(out, exist_ok=True)
    {"compare": compare, "scale": scale, "callgrind": callgrind}[mode](binary, out)
