#!/usr/bin/env bash
# Watch fan-out: W watchers of one resource while a writer updates 10
# ConfigMaps (1 KiB) at R writes/s, delivering W×R events/s; HTTP/1.1 with
# a connection per watcher, and HTTP/2 with watchers multiplexed. Also the
# server's memory per idle watcher. Load generator on the same cores.
#
#   bench/scripts/watch-fanout.sh OUTDIR     (SECS=10; CASES overrides the list; BIN=DIR; IDLE=0)
#
# Each case: "name watchers rate extra-bench-flags". Loopback only; stops
# what it starts.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?output directory}; mkdir -p "$OUT"
SECS=${SECS:-10}
CASES=${CASES:-"h1-1k 1000 100 -|h1-1k 1000 300 -|h1-10k 10000 20 -|h2-1k 1000 300 --http2|h2-1k 1000 500 --http2|h2-10k 10000 30 --http2_--connections_40|h2-10k 10000 50 --http2_--connections_40|h2-10k 10000 60 --http2_--connections_40"}
# BIN=DIR runs the binaries in DIR as they are (A/B runs of two builds).
[ -n "${BIN:-}" ] || cargo build --release -q -p kubeshard -p kubeshard-bench
BIN=${BIN:-target/release}; B=$BIN/kubeshard-bench; KS=$BIN/kubeshard
TMP=$(mktemp -d); pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$TMP"' EXIT
ulimit -n "$(ulimit -Hn)"
start() {
  rm -rf "$TMP/data"
  $KS --insecure-port 18800 --secure-port 0 --bind-address 127.0.0.1 --shards 2 --data-dir "$TMP/data" --storage memory >"$TMP/ks.log" 2>&1 & KSP=$!; pids+=($KSP)
  for _ in $(seq 200); do curl -sf http://127.0.0.1:18800/readyz >/dev/null 2>&1 && return; sleep 0.05; done
  echo "kubeshard did not become ready:" >&2; tail -5 "$TMP/ks.log" >&2
}
stop() { kill $KSP 2>/dev/null || true; wait $KSP 2>/dev/null || true; }
echo "case watchers rate events_per_s delivery_p50_ms delivery_p99_ms missing server_cores server_rss_mib client_cores"
IFS='|'; for c in $CASES; do
  IFS=' ' read -r name w rate extra <<<"$c"; extra=${extra//_/ }; [ "$extra" = - ] && extra=""
  IFS=' ' read -ra extra <<<"$extra"
  start
  # shellcheck disable=SC2086
  $B --quiet --duration "${SECS}s" --rate "$rate" --server-pid $KSP --output "$OUT/$name-r$rate.json" "${extra[@]}" watch --watchers "$w" --objects 10 --url http://127.0.0.1:18800 >"$TMP/bench.log" 2>&1 ||
    { echo "$name $w $rate: kubeshard-bench failed:" >&2; tail -5 "$TMP/bench.log" >&2; echo "server log:" >&2; tail -5 "$TMP/ks.log" >&2; stop; continue; }
  python3 - "$name" "$w" "$rate" "$OUT/$name-r$rate.json" <<'PY'
import json, sys
n, w, r, f = sys.argv[1:5]
d = json.load(open(f)); o = next(o for o in d["operations"] if o["name"] == d["primary"])
x = d["extra"]; s = d.get("server") or {}; c = d.get("client") or {}
print(n, w, r, round(x["events_per_s"]), o["latency_ms"]["p50"], o["latency_ms"]["p99"], x.get("events_missing"),
      round(s.get("cpu_seconds", 0) / d["elapsed_s"], 2), round(s.get("peak_rss_bytes", 0) / 2**20), round(c.get("cpu_seconds", 0) / d["elapsed_s"], 2))
PY
  stop
done | tee "$OUT/fanout.txt"
IFS=' '
# Memory per idle watcher: 10k watchers that receive (almost) nothing
# (IDLE=0 skips it).
[ "${IDLE:-1}" = 1 ] || exit 0
for mode in "h1 " "h2 --http2 --connections 40"; do
  set -- $mode; name=$1; shift
  start
  base=$(awk '/VmRSS/ {print $2}' /proc/$KSP/status)
  $B --quiet --duration 8s --rate 1 --server-pid $KSP --output "$OUT/idle-$name.json" "$@" watch --watchers 10000 --objects 10 --url http://127.0.0.1:18800 >/dev/null 2>&1 || true
  peak=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["server"]["peak_rss_bytes"]//1024)' "$OUT/idle-$name.json")
  echo "idle watchers ($name): RSS ${base} KiB -> ${peak} KiB: $(( (peak - base) * 1024 / 10000 )) bytes per watcher" | tee -a "$OUT/fanout.txt"
  stop
done
