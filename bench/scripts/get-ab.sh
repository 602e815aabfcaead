#!/usr/bin/env bash
# Interleaved GET A/B: the serving-stack ceiling (hello), kubeshard with
# default flags, and kubeshard with the extra flags given as arguments.
#
#   bench/scripts/get-ab.sh [extra kubeshard flags…]      (ROUNDS=3 SECS=8)
#
# Loopback only; stops every server it starts.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-8}
BIN=target/release/kubeshard
cargo build --release -q
pids=(); TMP=$(mktemp -d)
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$TMP"' EXIT
serve() { "$BIN" --insecure-port "$1" --secure-port 0 --bind-address 127.0.0.1 --shards 2 --data-dir "$TMP/$1" "${@:2}" >/dev/null 2>&1 & pids+=($!); }
serve 18201 --hello-bytes 1100
serve 18202
serve 18203 "$@"
sleep 1
body='{"metadata":{"name":"bench"},"data":{"payload":"'$(head -c 880 /dev/zero | tr '\0' x)'"}}'
for p in 18202 18203; do
  curl -sf -XPOST -H 'Content-Type: application/json' -d "$body" "localhost:$p/api/v1/namespaces/default/configmaps" >/dev/null
done
echo "round target req_per_s p99"
for r in $(seq "$ROUNDS"); do
  for t in "hello 18201 /" "default 18202 /api/v1/namespaces/default/configmaps/bench" "flags 18203 /api/v1/namespaces/default/configmaps/bench"; do
    set -- $t
    echo "$r $1 $(wrk -t2 -c64 -d"${SECS}s" --latency "http://127.0.0.1:$2$3" | awk '/Requests\/sec/ {rps=$2} /^ +99%/ {p99=$2} END {print rps, p99}')"
  done
done
