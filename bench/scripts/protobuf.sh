#!/usr/bin/env bash
# JSON vs protobuf on the wire, same server build, same run, alternating
# JSON and protobuf ROUNDS times (medians reported): GET of one pod at a
# time (64 in flight), unpaged LIST of N pods (one in flight), and watch
# fan-out (W watchers over HTTP/2 while a writer updates 10 ConfigMaps of
# 1 KiB at R/s: a pod's spec cannot be rewritten by a plain update).
# Per case: requests/s (events/s for the watch), p50/p99, the server's CPU
# per request (per event delivered for the watch) and bytes per object.
#
#   bench/scripts/protobuf.sh OUTDIR    (ROUNDS=3 SECS=8 N=10000 W=10000 R=30 ONLY="get list watch")
#
# Loopback only; stops what it starts.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?output directory}
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-8}; N=${N:-10000}; W=${W:-10000}; R=${R:-30}
cargo build --release -q -p kubeshard
KS=$PWD/target/release/kubeshard
source bench/scripts/servers-common.sh
ulimit -n "$(ulimit -Hn)"
echo '{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"web","tier":"frontend"}},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10","ports":[{"containerPort":8080,"protocol":"TCP"}],"resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}],"nodeName":"node-1"}}' >"$TMP/pod.json"
POD=(--resource /api/v1/namespaces/default/pods --kind Pod --template "$TMP/pod.json" --object-size 256)

want() { [[ " ${ONLY:-get list watch} " == *" $1 "* ]]; }

run() { # run NAME WIRE WORKLOAD-ARGS...
  local name=$1 wire=$2; shift 2
  want "$name" || return 0
  local flags=(); [ "$wire" = protobuf ] && flags=(--protobuf)
  start "$KS" s --storage memory
  for _ in $(seq 100); do curl -sf "$URL_s/api/v1/namespaces/default/serviceaccounts/default" >/dev/null && break; sleep 0.1; done
  "$BENCH" --quiet --duration "${SECS}s" --server-pid "$PID_s" --output "$OUT/$name-$wire-$round.json" \
    "${flags[@]}" "$@" --url "$URL_s" >"$OUT/$name-$wire-$round.log" 2>&1 ||
    { echo "$name $wire failed:" >&2; tail -5 "$OUT/$name-$wire-$round.log" >&2; }
  stop_all
}

for round in $(seq "$ROUNDS"); do
  for wire in json protobuf; do
    run get "$wire" "${POD[@]}" --concurrency 64 get --objects 100
    run list "$wire" "${POD[@]}" --concurrency 1 list --objects "$N" --page-size 0
    run watch "$wire" --rate "$R" --http2 --connections 40 watch --watchers "$W" --objects 10
  done
done

python3 - "$OUT" "$ROUNDS" <<'PY' | tee "$OUT/summary.txt"
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(name, wire, r):
    try:
        return json.load(open(f"{out}/{name}-{wire}-{r}.json"))
    except FileNotFoundError:
        return None
def figures(name, wire):
    rows = []
    for r in range(1, rounds + 1):
        d = load(name, wire, r)
        if not d:
            continue
        o = next(o for o in d["operations"] if o["name"] == d["primary"])
        cpu = (d.get("server") or {}).get("cpu_seconds", 0)
        x = d.get("extra", {})
        if name == "watch":
            n = max(x.get("events_delivered", 0), 1)
            rate = n / d["elapsed_s"]
        else:
            n = o["requests"]
            rate = n / d["elapsed_s"]
        per_obj = None
        if name == "list" and x.get("items_per_list"):
            per_obj = x["bytes_per_list"] / x["items_per_list"]
        rows.append((rate, o["latency_ms"]["p50"], o["latency_ms"]["p99"], cpu * 1e6 / max(n, 1), per_obj))
    return [statistics.median(c) if None not in c else None for c in zip(*rows)] if rows else None
print("case wire per_s p50_ms p99_ms server_cpu_us_per_op bytes_per_object")
for name in ("get", "list", "watch"):
    res = {}
    for wire in ("json", "protobuf"):
        f = figures(name, wire)
        res[wire] = f
        if f:
            b = "-" if f[4] is None else f"{f[4]:.0f}"
            print(f"{name} {wire} {f[0]:.0f} {f[1]:.2f} {f[2]:.2f} {f[3]:.1f} {b}")
    if res.get("json") and res.get("protobuf"):
        j, p = res["json"], res["protobuf"]
        if j[0] and j[3]:
            print(f"{name} protobuf/json: rate x{p[0]/j[0]:.2f}, cpu/op x{p[3]/j[3]:.2f}")
PY
