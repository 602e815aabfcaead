#!/usr/bin/env bash
# Instructions per operation of a kubeshard binary, counted by callgrind:
# the server runs under valgrind (--shards $SHARDS, default 1; memory storage) while
# kubeshard-bench does N and then 3N operations; the difference of the two
# runs' totals over 2N is the cost of one operation, start-up and set-up
# cancelled out. Repeatable whatever else the machine does.
#
#   [SHARDS=1] [AS=user] [SERVER_ARGS=...] bench/scripts/callgrind-per-op.sh BIN N WORKLOAD [ARGS...]
#   e.g. bench/scripts/callgrind-per-op.sh target/release/kubeshard 10000 get --objects 100
# (SHARDS=2: the instructions of both executors, cross-shard hops included.
# AS=tenant: the load acts as that user, bound to `edit`, through
# Impersonate-User — an ordinary tenant for flow control. SERVER_ARGS:
# extra server flags, e.g. --enable-priority-and-fairness=false. KEEP=dir:
# the callgrind outputs are kept there, for callgrind_annotate.)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${1:?usage: callgrind-per-op.sh BIN N WORKLOAD [ARGS...]}")
N=${2:?N}; shift 2
SHARDS=${SHARDS:-1}
cargo build --release -q -p kubeshard-bench
BENCH=$PWD/target/release/kubeshard-bench
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
total() {
  local n=$1; shift
  local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.$n" "$BIN" --insecure-port "$port" \
    --secure-port 0 --bind-address 127.0.0.1 --shards "$SHARDS" --storage memory --data-dir "$TMP/d$n" \
    ${SERVER_ARGS:-} >"$TMP/log.$n" 2>&1 &
  local vp=$!
  for _ in $(seq 600); do curl -sf "localhost:$port/readyz" >/dev/null && break; sleep 0.5; done
  local as=()
  if [ -n "${AS:-}" ]; then
    curl -sf -X POST -H 'Content-Type: application/json' \
      "localhost:$port/apis/rbac.authorization.k8s.io/v1/clusterrolebindings" \
      -d "{\"metadata\":{\"name\":\"bench-as\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"edit\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"$AS\"}]}" >/dev/null
    as=(--impersonate "$AS")
  fi
  "$BENCH" --url "http://127.0.0.1:$port" --quiet --count "$n" --concurrency 16 "${as[@]}" "$@" >/dev/null
  kill -INT "$vp"; wait "$vp" 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$TMP/cg.$n" "$KEEP/"; fi
  callgrind_annotate "$TMP/cg.$n" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
}
a=$(total "$N" "$@")
b=$(total "$((3 * N))" "$@")
echo "instructions per operation: $(( (b - a) / (2 * N) ))"
