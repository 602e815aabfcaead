#!/usr/bin/env bash
# Server memory per stored object: N ConfigMaps with a 1 KiB payload (two
# labels each, managedFields as every write records them) loaded into a
# fresh server, then its resident memory against the objects' JSON size
# (the unpaged LIST's size / N): the whole resident set per object, and
# what the objects added to it (the empty server's few MiB excluded).
#
#   bench/scripts/memory.sh [N]      (default 100000)
#
# Loopback only; stops what it starts.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-100000}
cargo build --release -q -p kubeshard -p kubeshard-bench
B=target/release/kubeshard-bench; KS=target/release/kubeshard
TMP=$(mktemp -d -p "$PWD/target"); pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$TMP"' EXIT
echo "storage objects json_bytes_per_object rss_before_kib rss_after_kib rss_bytes_per_object ratio added_bytes_per_object added_ratio"
for storage in "memory" "wal --fsync none"; do
  # shellcheck disable=SC2086
  $KS --insecure-port 18900 --secure-port 0 --bind-address 127.0.0.1 --shards 2 --data-dir "$TMP/d-${storage%% *}" --storage $storage >"$TMP/ks.log" 2>&1 & P=$!; pids+=($P)
  for _ in $(seq 200); do curl -sf http://127.0.0.1:18900/readyz >/dev/null 2>&1 && break; sleep 0.05; done
  before=$(awk '/VmRSS/ {print $2}' /proc/$P/status)
  $B --quiet --count "$N" --concurrency 64 --object-size 1024 create --url http://127.0.0.1:18900 >/dev/null
  sleep 1
  after=$(awk '/VmRSS/ {print $2}' /proc/$P/status)
  size=$(curl -s -o /dev/null -w '%{size_download}' "http://127.0.0.1:18900/api/v1/namespaces/default/configmaps")
  python3 -c "
n, size, b, a = $N, $size, $before, $after
added = (a - b) * 1024
print('${storage%% *}', n, size // n, b, a, a * 1024 // n, round(a * 1024 / size, 2), added // n, round(added / size, 2))"
  kill $P; wait $P 2>/dev/null || true
done
