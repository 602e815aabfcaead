#!/usr/bin/env bash
# A/B of two kubeshard binaries on the hot verbs, interleaved A B A B with
# `kubeshard-bench compare` (medians of per-round ratios B/A):
#
#   bench/scripts/ab.sh A_BIN B_BIN [OUT_DIR]     (ROUNDS=3 SECS=8 WORKLOADS="get create create-durable update list watch")
#
# get, create, update: in-memory storage, 64 clients over HTTP/1.1, 1 KiB
# ConfigMaps; create-durable: the log with --fsync=always, 256 clients;
# create-etcd (not in the default set; both binaries built with
# `--features etcd`): --storage etcd, both servers on one etcd (Debian's,
# on PATH) under prefixes of their own, 256 clients over HTTP/2;
# list: unpaged LIST of 100k ConfigMaps; watch: 10k watchers on the
# ConfigMaps of one namespace while 100 are updated at 200/s. Each pair of
# servers is started fresh for its workload on loopback ports and stopped
# at the end (also on failure).
set -euo pipefail
cd "$(dirname "$0")/../.."
A=$(realpath "${1:?usage: ab.sh A_BIN B_BIN [OUT_DIR]}")
B=$(realpath "${2:?usage: ab.sh A_BIN B_BIN [OUT_DIR]}")
OUT=${3:-$(mktemp -d /tmp/ab-XXXX)}
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-8}
WORKLOADS=${WORKLOADS:-get create create-durable update list watch}
source "$(dirname "$0")/servers-common.sh"

run() {
  local w=$1; shift
  local mode=(--storage memory) a=() b=()
  case $w in
    create-durable) mode=(--fsync always) ;;
    create-etcd) etcd_start; mode=(--storage etcd --etcd-servers "$ETCD_URL"); a=(--etcd-prefix /a); b=(--etcd-prefix /b) ;;
  esac
  start "$A" a "${mode[@]}" "${a[@]}"; start "$B" b "${mode[@]}" "${b[@]}"
  echo "== $w" | tee -a "$OUT/summary.txt"
  "$BENCH" --duration "${SECS}s" --output "$OUT/$w.json" --quiet "$@" \
    compare --a "$URL_a" --b "$URL_b" --a-pid "$PID_a" --b-pid "$PID_b" --rounds "$ROUNDS" "${WORKLOAD[@]}" \
    | tee -a "$OUT/summary.txt"
  stop_all
}

for w in $WORKLOADS; do
  case $w in
    get) WORKLOAD=(get --objects 100); run get --concurrency 64 ;;
    create) WORKLOAD=(create); run create --concurrency 64 ;;
    create-durable) WORKLOAD=(create); run create-durable --concurrency 256 --http2 ;;
    create-etcd) WORKLOAD=(create); run create-etcd --concurrency 256 --http2 --connections 16 ;;
    update) WORKLOAD=(update --objects 100 --mode put); run update --concurrency 64 ;;
    list) WORKLOAD=(list --objects 100000); run list --concurrency 4 --object-size 200 ;;
    watch) WORKLOAD=(watch --watchers 10000 --objects 100); run watch --rate 200 --http2 --connections 16 ;;
    *) echo "unknown workload $w" >&2; exit 2 ;;
  esac
done
echo "results in $OUT"
