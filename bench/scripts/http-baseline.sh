#!/usr/bin/env bash
# GET and create throughput of kubeshard against the same serving stack in
# calibration mode (a fixed 1 KiB "hello" body), interleaved A B A B on the
# same machine, plus peak RSS with 100k ConfigMaps of 1 KiB.
#
#   bench/scripts/http-baseline.sh [rounds] [seconds]
#
# Needs wrk (apt-get install wrk). Loopback only. Every server it starts, it stops.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
SECS=${2:-10}
BIN=target/release/kubeshard
cargo build --release -q
OUT=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$OUT"' EXIT

start() { # start <port> [flags…]: starts the server and waits for readiness
  local port=$1; shift
  "$BIN" --insecure-port "$port" --secure-port 0 --bind-address 127.0.0.1 --shards 2 --data-dir "$OUT/data-$port" "$@" >"$OUT/server-$port.log" 2>&1 &
  echo $! >"$OUT/pid-$port"
  for _ in $(seq 200); do
    curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return 0
    curl -sf "http://127.0.0.1:$port/" >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "server on $port did not start" >&2; exit 1
}
stop() { kill "$(cat "$OUT/pid-$1")"; wait "$(cat "$OUT/pid-$1")" 2>/dev/null || true; }

summary() { # prints "req/s p50 p99"
  awk '/Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2} END {print rps, p50, p99}'
}

HELLO=18181; KS=18182
start $HELLO --hello-bytes 1024
start $KS
python3 - "$KS" <<'PY'
import json, sys, urllib.request
port = sys.argv[1]
body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench"}, "data": {"payload": "x" * 880}}).encode()
req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/namespaces/default/configmaps", body, {"Content-Type": "application/json"})
print("GET object bytes:", len(urllib.request.urlopen(req).read()))
PY
echo "round,target,req_per_s,p50,p99"
for r in $(seq "$ROUNDS"); do
  for target in hello get; do
    if [ $target = hello ]; then url="http://127.0.0.1:$HELLO/"; else url="http://127.0.0.1:$KS/api/v1/namespaces/default/configmaps/bench"; fi
    line=$(wrk -t2 -c64 -d"${SECS}s" --latency "$url" | summary)
    echo "$r,$target,${line// /,}"
  done
  line=$(PREFIX="r$r" wrk -t2 -c64 -d"${SECS}s" --latency -s bench/scripts/create.lua "http://127.0.0.1:$KS/api/v1/namespaces/default/configmaps" | summary)
  echo "$r,create,${line// /,}"
done
stop $HELLO; stop $KS

# Peak RSS with 100k ConfigMaps of 1 KiB (64 connections, 2 threads).
start $KS
BASE_RSS=$(awk '/VmRSS/ {print $2}' /proc/"$(cat "$OUT/pid-$KS")"/status)
PREFIX=load STOP_AFTER=50000 wrk -t2 -c64 -d120s -s bench/scripts/create.lua "http://127.0.0.1:$KS/api/v1/namespaces/default/configmaps" >/dev/null
COUNT=$(curl -s "http://127.0.0.1:$KS/api/v1/namespaces/default/configmaps?limit=1" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(1 + d["metadata"].get("remainingItemCount", 0))')
HWM=$(awk '/VmHWM/ {print $2}' /proc/"$(cat "$OUT/pid-$KS")"/status)
RSS=$(awk '/VmRSS/ {print $2}' /proc/"$(cat "$OUT/pid-$KS")"/status)
LIST_BYTES=$(curl -s "http://127.0.0.1:$KS/api/v1/namespaces/default/configmaps" | wc -c)
echo "objects=$COUNT base_rss_kib=$BASE_RSS rss_kib=$RSS peak_rss_kib=$HWM list_bytes=$LIST_BYTES"
echo "bytes_per_object=$(( (RSS - BASE_RSS) * 1024 / COUNT )) json_bytes_per_object=$(( LIST_BYTES / COUNT ))"
stop $KS
