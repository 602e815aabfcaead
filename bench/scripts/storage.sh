#!/usr/bin/env bash
# Durable creates: kubeshard with each --fsync policy against etcd 3.4 doing
# puts of the same size and concurrency on the same disk, interleaved per
# round, with kubeshard-bench (closed loop, 1 KiB payloads). kubeshard is
# driven over HTTP/1.1 (one connection per client) and, with fsync=always,
# also over HTTP/2; etcd's client is gRPC, HTTP/2 on up to 4 connections.
#
#   bench/scripts/storage.sh OUTDIR     (ROUNDS=2 SECS=6 CONC="1 16 256")
#
# Also: disk bytes per object and recovery time (RECOVER_N objects, default
# 1,000,000; set RECOVER_N=0 to skip). Needs etcd and protoc (apt-get install
# -y etcd-server protobuf-compiler). Loopback only; stops what it starts.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?output directory}; mkdir -p "$OUT"
ROUNDS=${ROUNDS:-2}; SECS=${SECS:-6}; CONC=${CONC:-"1 16 256"}
RECOVER_N=${RECOVER_N:-1000000}
cargo build --release -q -p kubeshard -p kubeshard-bench --features kubeshard-bench/etcd
B=target/release/kubeshard-bench; KS=target/release/kubeshard
# The data lives on the same disk as the repository (not a tmpfs).
TMP=$(mktemp -d -p "$PWD/target"); pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$TMP"' EXIT
# shellcheck source=storage-common.sh
. bench/scripts/storage-common.sh

start_ks() { # start_ks NAME [flags]: fresh data dir, port 18500
  rm -rf "$TMP/$1"
  $KS --insecure-port 18500 --secure-port 0 --bind-address 127.0.0.1 --shards 2 --data-dir "$TMP/$1" "${@:2}" >"$TMP/$1.log" 2>&1 & KSP=$!; pids+=($KSP)
  ready http://127.0.0.1:18500/readyz "$TMP/$1.log"
}

echo "round target concurrency creates_per_s p50_ms p99_ms"
for r in $(seq "$ROUNDS"); do
  for c in $CONC; do
    # "+h2": the same server driven over HTTP/2 with the requests
    # multiplexed on 4 connections, as the etcd client's gRPC does.
    for run in always interval:10ms none always+h2; do
      policy=${run%+h2}; transport=(); label="kubeshard-fsync=$policy"
      if [ "$run" != "$policy" ]; then transport=(--http2); label="$label-http2"; fi
      start_ks "ks-$policy" --fsync "$policy"
      $B --quiet --duration "${SECS}s" --concurrency "$c" --object-size 1024 "${transport[@]}" --output "$OUT/ks-$run-c$c-r$r.json" create --url http://127.0.0.1:18500 >/dev/null
      row "$OUT/ks-$run-c$c-r$r.json" "" "$r" "$label" "$c"
      stop $KSP
    done
    start_etcd
    $B --quiet --duration "${SECS}s" --concurrency "$c" --object-size 1024 --output "$OUT/etcd-c$c-r$r.json" etcd --endpoint http://127.0.0.1:23790 create >/dev/null
    row "$OUT/etcd-c$c-r$r.json" "" "$r" "etcd-3.4" "$c"
    stop $ETP
  done
done | tee "$OUT/creates.txt"

if [ "$RECOVER_N" -gt 0 ]; then
  # Load RECOVER_N objects (fsync=none to load fast; the log format is the
  # same), stop, measure disk use, then time a restart to ready.
  start_ks recover --fsync none
  $B --quiet --count "$RECOVER_N" --concurrency 64 --object-size 1024 --output "$OUT/load.json" create --url http://127.0.0.1:18500 >/dev/null
  json=$(curl -s "http://127.0.0.1:18500/api/v1/namespaces/default/configmaps?limit=1" >/dev/null; curl -s -o "$TMP/list.json" -w '%{size_download}' http://127.0.0.1:18500/api/v1/configmaps)
  count=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$TMP/list.json")
  stop $KSP
  disk=$(du -sb "$TMP/recover" | cut -f1)
  echo "objects $count, JSON $json bytes ($((json / count)) per object), disk $disk bytes ($((disk / count)) per object)" | tee "$OUT/disk.txt"
  t0=$(date +%s.%N)
  $KS --insecure-port 18500 --secure-port 0 --bind-address 127.0.0.1 --shards 2 --data-dir "$TMP/recover" >"$TMP/recover2.log" 2>&1 & KSP=$!; pids+=($KSP)
  ready http://127.0.0.1:18500/readyz "$TMP/recover2.log"
  t1=$(date +%s.%N)
  echo "restart to ready with $count objects: $(python3 -c "print(round($t1-$t0,2))") s; $(grep -o 'recovered stored state.*' "$TMP/recover2.log" | sed 's/\x1b\[[0-9;]*m//g')" | tee -a "$OUT/disk.txt"
  stop $KSP
fi
