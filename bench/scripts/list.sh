#!/usr/bin/env bash
# LIST of 100k ConfigMaps of 1 KiB: the bench client's unpaged lists and
# paged walks (limit=500), each decoded; then curl's transfer time of the
# unpaged list (no decoding at the client) and, for scale, of one
# pre-built body of the same size served by the same stack (the loopback +
# curl ceiling on this machine).
#
#   bench/scripts/list.sh OUTDIR     (N=100000 SECS=20 CURLS=7)
#
# Loopback only; stops what it starts.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?output directory}; mkdir -p "$OUT"
N=${N:-100000}; SECS=${SECS:-20}; CURLS=${CURLS:-7}
cargo build --release -q -p kubeshard -p kubeshard-bench
B=target/release/kubeshard-bench; KS=target/release/kubeshard
TMP=$(mktemp -d -p "$PWD/target"); pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$TMP"' EXIT
start() { # start [flags]
  $KS --insecure-port 18700 --secure-port 0 --bind-address 127.0.0.1 --shards 2 --data-dir "$TMP/data" --storage memory "$@" >"$TMP/ks.log" 2>&1 & KSP=$!; pids+=($KSP)
  for _ in $(seq 200); do curl -sf http://127.0.0.1:18700/readyz >/dev/null 2>&1 && return; sleep 0.05; done
  echo "server not ready" >&2; exit 1
}
stop() { kill "$KSP" 2>/dev/null || true; wait "$KSP" 2>/dev/null || true; }
curl_times() { # curl_times URL: CURLS transfer times in ms, sorted
  for _ in $(seq "$CURLS"); do curl -s -o /dev/null -w '%{time_total}\n' "$1"; done |
    python3 -c 'import sys; t=sorted(float(l)*1000 for l in sys.stdin); print("min %.0f median %.0f max %.0f ms" % (t[0], t[len(t)//2], t[-1]))'
}

start
$B --quiet --duration "${SECS}s" --concurrency 1 --object-size 1024 --output "$OUT/list.json" list --url http://127.0.0.1:18700 --objects "$N" --page-size 500 >/dev/null
python3 - "$OUT/list.json" <<'PY' | tee "$OUT/list.txt"
import json, sys
d = json.load(open(sys.argv[1]))
for o in d["operations"]:
    l = o["latency_ms"]
    print(f'{o["name"]}: {o["requests"]} runs, p50 {l["p50"]:.1f} ms, p99 {l["p99"]:.1f} ms')
PY
url="http://127.0.0.1:18700/api/v1/namespaces/default/configmaps"
size=$(curl -s -o /dev/null -w '%{size_download}' "$url")
echo "unpaged LIST at curl ($size bytes): $(curl_times "$url")" | tee -a "$OUT/list.txt"
stop
start --hello-bytes "$size"
echo "pre-built body of $size bytes at curl: $(curl_times http://127.0.0.1:18700/hello)" | tee -a "$OUT/list.txt"
stop
