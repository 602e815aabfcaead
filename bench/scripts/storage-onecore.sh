#!/usr/bin/env bash
# Durable creates with the load generator on a core of its own: kubeshard
# confined to CPU 0 with one shard, etcd 3.4 free on both CPUs, and
# kubeshard-bench pinned to CPU 1 for both (RUNTIME-NOTES: on two cores,
# measure with the client pinned). fsync=always (etcd syncs every commit),
# 1 KiB objects, 256 clients, interleaved per round; kubeshard over
# HTTP/1.1 and over HTTP/2 (4 connections, like the etcd client's gRPC).
#
#   bench/scripts/storage-onecore.sh OUTDIR     (ROUNDS=3 SECS=10 CONC=256)
#
# Needs etcd and protoc (apt-get install -y etcd-server protobuf-compiler)
# and at least two CPUs. Loopback only; stops what it starts.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?output directory}; mkdir -p "$OUT"
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-10}; CONC=${CONC:-256}
cargo build --release -q -p kubeshard -p kubeshard-bench --features kubeshard-bench/etcd
B="taskset -c 1 target/release/kubeshard-bench"; KS=target/release/kubeshard
TMP=$(mktemp -d -p "$PWD/target"); pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$TMP"' EXIT
ready() { for _ in $(seq 400); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.05; done; echo "not ready: $1" >&2; exit 1; }
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
cores() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat"; }
row() { # row ROUND TARGET JSON CPU_SECONDS
  python3 - "$@" <<'PY'
import json, sys
r, t, f, cpu = sys.argv[1:5]
d = json.load(open(f))
o = next(o for o in d["operations"] if o["name"] == d["primary"])
errs = sum(o["errors"].values()) if o["errors"] else 0
print(r, t, round(o["throughput_per_s"]), o["latency_ms"]["p50"], o["latency_ms"]["p99"],
      "server_cores", round(float(cpu) / d["elapsed_s"], 2), "client_cores", round(d["client"]["cpu_cores"], 2),
      f"errors={errs}" if errs else "")
PY
}
echo "round target creates_per_s p50_ms p99_ms server_cores client_cores"
for r in $(seq "$ROUNDS"); do
  for transport in http1 http2; do
    rm -rf "$TMP/ks"
    taskset -c 0 $KS --insecure-port 18500 --secure-port 0 --bind-address 127.0.0.1 --shards 1 --fsync always --data-dir "$TMP/ks" >"$TMP/ks.log" 2>&1 & KSP=$!; pids+=($KSP)
    ready http://127.0.0.1:18500/readyz
    flags=(); [ "$transport" = http2 ] && flags=(--http2)
    c0=$(cores $KSP)
    $B --quiet --duration "${SECS}s" --concurrency "$CONC" --object-size 1024 "${flags[@]}" --output "$OUT/ks-$transport-r$r.json" create --url http://127.0.0.1:18500 >/dev/null
    c1=$(cores $KSP)
    row "$r" "kubeshard-1shard-cpu0-$transport" "$OUT/ks-$transport-r$r.json" "$(python3 -c "print($c1 - $c0)")"
    stop $KSP
  done
  rm -rf "$TMP/etcd"
  etcd --data-dir "$TMP/etcd" --listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
    --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
    --initial-cluster default=http://127.0.0.1:23800 --quota-backend-bytes 8589934592 >"$TMP/etcd.log" 2>&1 & ETP=$!; pids+=($ETP)
  ready http://127.0.0.1:23790/health
  c0=$(cores $ETP)
  $B --quiet --duration "${SECS}s" --concurrency "$CONC" --object-size 1024 --output "$OUT/etcd-r$r.json" etcd --endpoint http://127.0.0.1:23790 create >/dev/null
  c1=$(cores $ETP)
  row "$r" "etcd-3.4-both-cpus" "$OUT/etcd-r$r.json" "$(python3 -c "print($c1 - $c0)")"
  stop $ETP
done | tee "$OUT/creates.txt"
