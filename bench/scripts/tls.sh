#!/usr/bin/env bash
# The security front end's cost, in one run: GET of one ConfigMap over
# plain HTTP (the privileged loopback port: no authentication, no
# authorization) against the same server over TLS, authenticated with a
# static token, once as a system:masters user (authorization short cut)
# and once as a user allowed by an RBAC binding (a full RBAC decision);
# interleaved rounds. Then TLS handshakes/s: the same GET with
# `Connection: close`, so every request is a new TLS connection.
#
#   bench/scripts/tls.sh            (ROUNDS=3 SECS=8)
#
# Loopback only; stops the server it starts.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-8}
BIN=target/release/kubeshard
cargo build --release -q -p kubeshard
TMP=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$TMP"' EXIT
printf 'admin-token,bench-admin,u1,system:masters\nreader-token,bench-reader,u2,\n' >"$TMP/tokens.csv"
"$BIN" --shards 2 --storage memory --data-dir "$TMP/data" --insecure-port 18601 --secure-port 18643 --bind-address 127.0.0.1 \
  --token-auth-file "$TMP/tokens.csv" --max-requests-inflight 0 >"$TMP/server.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do curl -sf localhost:18601/readyz >/dev/null 2>&1 && break; sleep 0.1; done
body='{"metadata":{"name":"bench"},"data":{"payload":"'$(head -c 880 /dev/zero | tr '\0' x)'"}}'
curl -sf -XPOST -H 'Content-Type: application/json' -d "$body" localhost:18601/api/v1/namespaces/default/configmaps >/dev/null
curl -sf -XPOST -H 'Content-Type: application/json' localhost:18601/apis/rbac.authorization.k8s.io/v1/clusterrolebindings \
  -d '{"metadata":{"name":"bench-reader"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"bench-reader"}]}' >/dev/null
P=/api/v1/namespaces/default/configmaps/bench
run() { wrk -t2 -c64 -d"${SECS}s" --latency "$@" | awk '/Requests\/sec/ {rps=$2} /^ +99%/ {p99=$2} /Non-2xx/ {bad=$NF} END {print rps, p99, (bad ? "non2xx=" bad : "")}'; }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "round target req_per_s p99"
for r in $(seq "$ROUNDS"); do
  echo "$r plain-http $(run "http://127.0.0.1:18601$P")"
  echo "$r tls-masters $(run -H 'Authorization: Bearer admin-token' "https://127.0.0.1:18643$P")"
  echo "$r tls-rbac $(run -H 'Authorization: Bearer reader-token' "https://127.0.0.1:18643$P")"
  echo "$r tls-handshake $(run -H 'Authorization: Bearer reader-token' -H 'Connection: close' "https://127.0.0.1:18643$P")"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
