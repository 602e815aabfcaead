#!/usr/bin/env bash
# Durable creates with the load generator on a core of its own: kubeshard
# confined to CPU 0 with one shard, etcd 3.4 free on both CPUs, and
# kubeshard-bench pinned to CPU 1 for both (RUNTIME-NOTES: on two cores,
# measure with the client pinned). fsync=always (etcd syncs every commit),
# 1 KiB objects, 1, 16 and 256 clients, interleaved per round; kubeshard over
# HTTP/1.1 and over HTTP/2 (4 connections, like the etcd client's gRPC).
#
#   bench/scripts/storage-onecore.sh OUTDIR     (ROUNDS=3 SECS=10 CONC="1 16 256")
#
# Needs etcd and protoc (apt-get install -y etcd-server protobuf-compiler)
# and at least two CPUs. Loopback only; stops what it starts.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?output directory}; mkdir -p "$OUT"
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-10}; CONC=${CONC:-"1 16 256"}
cargo build --release -q -p kubeshard -p kubeshard-bench --features kubeshard-bench/etcd
B="taskset -c 1 target/release/kubeshard-bench"; KS=target/release/kubeshard
TMP=$(mktemp -d -p "$PWD/target"); pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$TMP"' EXIT
# shellcheck source=storage-common.sh
. bench/scripts/storage-common.sh
echo "round target concurrency creates_per_s p50_ms p99_ms server_cores client_cores"
for r in $(seq "$ROUNDS"); do
 for c in $CONC; do
  for transport in http1 http2; do
    rm -rf "$TMP/ks"
    taskset -c 0 $KS --insecure-port 18500 --secure-port 0 --bind-address 127.0.0.1 --shards 1 --fsync always --data-dir "$TMP/ks" >"$TMP/ks.log" 2>&1 & KSP=$!; pids+=($KSP)
    ready http://127.0.0.1:18500/readyz "$TMP/ks.log"
    flags=(); [ "$transport" = http2 ] && flags=(--http2)
    c0=$(cpu_seconds $KSP)
    $B --quiet --duration "${SECS}s" --concurrency "$c" --object-size 1024 "${flags[@]}" --output "$OUT/ks-$transport-c$c-r$r.json" create --url http://127.0.0.1:18500 >/dev/null
    c1=$(cpu_seconds $KSP)
    row "$OUT/ks-$transport-c$c-r$r.json" "$(python3 -c "print($c1 - $c0)")" "$r" "kubeshard-1shard-cpu0-$transport" "$c"
    stop $KSP
  done
  start_etcd
  c0=$(cpu_seconds $ETP)
  $B --quiet --duration "${SECS}s" --concurrency "$c" --object-size 1024 --output "$OUT/etcd-c$c-r$r.json" etcd --endpoint http://127.0.0.1:23790 create >/dev/null
  c1=$(cpu_seconds $ETP)
  row "$OUT/etcd-c$c-r$r.json" "$(python3 -c "print($c1 - $c0)")" "$r" "etcd-3.4-both-cpus" "$c"
  stop $ETP
 done
done | tee "$OUT/creates.txt"
