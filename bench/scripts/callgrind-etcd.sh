#!/usr/bin/env bash
# Instructions per create of a kubeshard binary on etcd, thread by thread,
# counted by callgrind: etcd (Debian's, on PATH) runs natively; the server
# runs under valgrind with one executor; after 300 creates of warm-up the
# counters are zeroed, N creates are made, and the counters dumped
# (callgrind_control), so start-up is left out without stopping the server
# (its shutdown under valgrind can take minutes).
#
#   bench/scripts/callgrind-etcd.sh BIN [N] [OUT_DIR]      (N=2000; BIN built with --features etcd)
#
# Prints each thread's instructions per create: the executor ("shard-0")
# and the etcd-client thread ("etcd") are the ones that matter.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${1:?usage: callgrind-etcd.sh BIN [N] [OUT_DIR]}")
N=${2:-2000}
OUT=$(realpath -m "${3:-$(mktemp -d /tmp/cg-etcd-XXXX)}")
source "$(dirname "$0")/servers-common.sh"
kp=$(port)
etcd_start
valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$OUT/cg.out" "$BIN" \
  --storage etcd --etcd-servers "$ETCD_URL" --insecure-port "$kp" --secure-port 0 \
  --bind-address 127.0.0.1 --shards 1 --data-dir "$TMP/ks" >"$OUT/kubeshard.log" 2>&1 &
VP=$!; pids+=("$VP")
for _ in $(seq 600); do curl -sf "http://127.0.0.1:$kp/readyz" >/dev/null && break; sleep 0.5; done
load() { "$BENCH" --url "http://127.0.0.1:$kp" --quiet --concurrency 16 --count "$1" --prefix "$2" create >/dev/null; }
load 300 warm
# Thread names, by the order valgrind numbers threads (its thread ids are
# 1-based creation order; /proc lists tasks in the same order).
ls /proc/$VP/task | sort -n | while read -r t; do cat "/proc/$VP/task/$t/comm"; done >"$OUT/threads.txt"
callgrind_control -z "$VP" >/dev/null
load "$N" run
callgrind_control -d "$VP" >/dev/null
sleep 2
i=0
while read -r name; do
  i=$((i + 1)); f=$(printf '%s/cg.out.1-%02d' "$OUT" "$i")
  [ -f "$f" ] || continue
  total=$(callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  [[ ${total:-} =~ ^[0-9]+$ ]] && [ "$total" != 0 ] || continue
  echo "$name: $(( total / N )) instructions per create"
done <"$OUT/threads.txt" | tee "$OUT/summary.txt"
