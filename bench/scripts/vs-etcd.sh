#!/usr/bin/env bash
# kubeshard against etcd (the store kube-apiserver sits on), same object
# size and concurrency, interleaved, with kubeshard-bench. Also a short
# cluster simulation with SVG charts.
#
#   bench/scripts/vs-etcd.sh OUTDIR        (ROUNDS=2 SECS=5)
#
# Needs etcd (apt-get install -y etcd-server protobuf-compiler). Loopback
# only; stops every server it starts.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?output directory}; mkdir -p "$OUT"
ROUNDS=${ROUNDS:-2}; SECS=${SECS:-5}
cargo build --release -q -p kubeshard -p kubeshard-bench --features kubeshard-bench/etcd
B=target/release/kubeshard-bench
TMP=$(mktemp -d); pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$TMP"' EXIT
target/release/kubeshard --insecure-port 18400 --secure-port 0 --bind-address 127.0.0.1 --shards 2 --data-dir "$TMP/ks" >"$TMP/ks.log" 2>&1 & KS=$!; pids+=($KS)
etcd --data-dir "$TMP/etcd" --listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
  --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
  --initial-cluster default=http://127.0.0.1:23800 >"$TMP/etcd.log" 2>&1 & ET=$!; pids+=($ET)
sleep 2
U=http://127.0.0.1:18400; E="--endpoint http://127.0.0.1:23790"
for r in $(seq "$ROUNDS"); do
  for w in create get; do
    $B --quiet --duration "${SECS}s" --concurrency 64 --server-pid $KS --output "$OUT/ks-$w-$r.json" $w --url $U | grep -E '^\*'
    $B --quiet --duration "${SECS}s" --concurrency 64 --server-pid $ET --output "$OUT/etcd-$w-$r.json" etcd $E $w | grep -E '^\*'
  done
done
$B --quiet --duration "${SECS}s" --concurrency 4 --server-pid $KS --output "$OUT/ks-list.json" list --url $U --namespace big --objects 10000 --page-size 500 | grep -E '^\*|list'
$B --quiet --duration "${SECS}s" --concurrency 4 --server-pid $ET --output "$OUT/etcd-list.json" etcd $E list --objects 10000 --page-size 500 | grep -E '^\*|list'
$B --quiet --duration 20s --server-pid $KS --output "$OUT/ks-cluster.json" --charts "$OUT/charts" cluster --url $U --namespace sim --nodes 1000 --churn 50 --pods 500 --informers 10 | tail -12
