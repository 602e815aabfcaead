#!/usr/bin/env bash
# What the aggregation layer's proxy costs: GETs of an extension server
# (`kubeshard-bench metrics-server`, registered by APIService) read
# directly over TLS with the front-proxy certificate (A) and through
# kubeshard's secure port with the admin certificate (B), alternated
# A B A B; then watch events per second, directly and through kubeshard.
#
#   bench/scripts/aggregator.sh BIN [OUT_DIR]     (ROUNDS=3 SECS=8 RATE=2000)
#
# latency: an open loop at RATE GETs/s, 16 clients, over 100 NodeMetrics:
#   the added p50/p99 is the proxy's (kubeshard's CPU per proxied GET is
#   its CPU seconds over the GETs it served);
# saturated: a closed loop of 64 clients (throughput, and kubeshard's CPU
#   per GET at full load);
# watch: one watch of 100 nodes whose server sends events as fast as the
#   connection takes them, read with curl for SECS seconds.
# kubeshard runs on 2 shards with in-memory storage; everything on loopback.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${1:?usage: aggregator.sh BIN [OUT_DIR]}")
OUT=${2:-$(mktemp -d /tmp/aggregator-XXXX)}
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-8}; RATE=${RATE:-2000}
source "$(dirname "$0")/servers-common.sh"

start "$BIN" ks --storage memory
PKI=$TMP/ks/pki
VIA=$TMP/ks/admin.kubeconfig
kc_field() { sed -n "s/^ *$1: //p" "$VIA" | head -1; }
SECURE_URL=$(kc_field server)
kc_field client-certificate-data | base64 -d >"$TMP/admin.crt"
kc_field client-key-data | base64 -d >"$TMP/admin.key"

# The extension server's serving certificate, from a CA of its own.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=ext-ca \
  -keyout "$TMP/ext-ca.key" -out "$TMP/ext-ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=metrics-server -keyout "$TMP/ext.key" -out "$TMP/ext.csr" 2>/dev/null
printf 'subjectAltName=DNS:metrics-server.kube-system.svc,IP:127.0.0.1\n' >"$TMP/san.ext"
openssl x509 -req -in "$TMP/ext.csr" -CA "$TMP/ext-ca.crt" -CAkey "$TMP/ext-ca.key" -CAcreateserial \
  -days 1 -extfile "$TMP/san.ext" -out "$TMP/ext.crt" 2>/dev/null

serve_ext() { # serve_ext PORT WATCH_INTERVAL
  "$BENCH" metrics-server --port "$1" --cert "$TMP/ext.crt" --key "$TMP/ext.key" \
    --requestheader-client-ca "$PKI/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
    --generated-nodes 100 --watch-interval "$2" --default-user bench 2>>"$OUT/metrics-server.log" &
  pids+=("$!")
  for _ in $(seq 100); do
    curl -s -o /dev/null --cacert "$TMP/ext-ca.crt" --cert "$PKI/front-proxy-client.crt" \
      --key "$PKI/front-proxy-client.key" "https://127.0.0.1:$1/apis" && return
    sleep 0.1
  done
  echo "metrics-server did not start" >&2; exit 1
}
EXT=$(port)
serve_ext "$EXT" 1s
EXT_PID=${pids[-1]}

post() { curl -sf -XPOST -H 'content-type: application/json' "$URL_ks$1" -d "$2" >/dev/null; }
post /api/v1/namespaces/kube-system/services \
  "{\"metadata\":{\"name\":\"metrics-server\"},\"spec\":{\"ports\":[{\"name\":\"https\",\"port\":443,\"targetPort\":$EXT}]}}"
post /apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices \
  "{\"metadata\":{\"name\":\"metrics-server-1\",\"labels\":{\"kubernetes.io/service-name\":\"metrics-server\"}},\"addressType\":\"IPv4\",\"ports\":[{\"name\":\"https\",\"port\":$EXT}],\"endpoints\":[{\"addresses\":[\"127.0.0.1\"]}]}"
post /apis/apiregistration.k8s.io/v1/apiservices \
  "{\"metadata\":{\"name\":\"v1beta1.metrics.k8s.io\"},\"spec\":{\"group\":\"metrics.k8s.io\",\"version\":\"v1beta1\",\"groupPriorityMinimum\":100,\"versionPriority\":100,\"caBundle\":\"$(base64 -w0 <"$TMP/ext-ca.crt")\",\"service\":{\"namespace\":\"kube-system\",\"name\":\"metrics-server\",\"port\":443}}}"
for _ in $(seq 100); do
  curl -sf "$URL_ks/apis/metrics.k8s.io/v1beta1/nodes/node-0" >/dev/null && break
  sleep 0.2
done

# Direct: the front proxy's certificate (the server takes the user from
# --default-user). Through kubeshard: the admin kubeconfig.
cat >"$TMP/direct.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: ext, cluster: {server: "https://127.0.0.1:$EXT", certificate-authority: "$TMP/ext-ca.crt"}}]
users: [{name: proxy, user: {client-certificate: "$PKI/front-proxy-client.crt", client-key: "$PKI/front-proxy-client.key"}}]
contexts: [{name: ext, context: {cluster: ext, user: proxy}}]
current-context: ext
EOF
GET=(get --existing --prefix node --objects 100 --resource /apis/metrics.k8s.io/v1beta1/nodes --kind NodeMetrics)

run() { # run NAME KUBECONFIG [flags]
  local name=$1 kc=$2; shift 2
  "$BENCH" --kubeconfig "$kc" --duration "${SECS}s" --quiet --output "$OUT/$name.json" "$@"
}
for r in $(seq "$ROUNDS"); do
  run "latency-direct-r$r" "$TMP/direct.kubeconfig" --rate "$RATE" --concurrency 16 "${GET[@]}"
  run "latency-via-r$r" "$VIA" --rate "$RATE" --concurrency 16 --server-pid "$PID_ks" "${GET[@]}"
  run "saturated-direct-r$r" "$TMP/direct.kubeconfig" --concurrency 64 "${GET[@]}"
  run "saturated-via-r$r" "$VIA" --concurrency 64 --server-pid "$PID_ks" "${GET[@]}"
done

# Watch: the extension server sends events as fast as they are taken.
kill "$EXT_PID"; wait "$EXT_PID" 2>/dev/null || true
serve_ext "$EXT" 0s
sleep 2 # the aggregator sees it available again
count_events() { # count_events URL [curl flags] → events in SECS seconds
  local url=$1; shift
  timeout "$SECS" curl -sN "$@" "$url" | wc -l || true
}
for r in $(seq "$ROUNDS"); do
  d=$(count_events "https://127.0.0.1:$EXT/apis/metrics.k8s.io/v1beta1/nodes?watch=true" \
    --cacert "$TMP/ext-ca.crt" --cert "$PKI/front-proxy-client.crt" --key "$PKI/front-proxy-client.key")
  cpu0=$(awk '{print $14+$15}' "/proc/$PID_ks/stat")
  v=$(count_events "$SECURE_URL/apis/metrics.k8s.io/v1beta1/nodes?watch=true" \
    --cacert "$PKI/ca.crt" --cert "$TMP/admin.crt" --key "$TMP/admin.key")
  cpu1=$(awk '{print $14+$15}' "/proc/$PID_ks/stat")
  echo "watch-r$r direct=$d via=$v kubeshard_cpu_ticks=$((cpu1 - cpu0))" | tee -a "$OUT/watch.txt"
done

python3 - "$OUT" "$ROUNDS" "$SECS" <<'PY' | tee "$OUT/summary.txt"
import json, sys, statistics as st
out, rounds, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def load(n): return json.load(open(f"{out}/{n}.json"))
def op(r): return next(o for o in r["operations"] if o["name"] == r["primary"])
for kind in ("latency", "saturated"):
    rows = []
    for i in range(1, rounds + 1):
        d, v = load(f"{kind}-direct-r{i}"), load(f"{kind}-via-r{i}")
        od, ov = op(d), op(v)
        cpu_us = v["server"]["cpu_seconds"] / max(ov["requests"], 1) * 1e6
        rows.append((od["latency_ms"]["p50"], ov["latency_ms"]["p50"], od["latency_ms"]["p99"],
                     ov["latency_ms"]["p99"], od["throughput_per_s"], ov["throughput_per_s"], cpu_us))
        print(f"{kind} r{i}: direct p50 {rows[-1][0]:.3f} ms p99 {rows[-1][2]:.3f} ms {rows[-1][4]:.0f}/s | "
              f"via p50 {rows[-1][1]:.3f} ms p99 {rows[-1][3]:.3f} ms {rows[-1][5]:.0f}/s | "
              f"kubeshard CPU {cpu_us:.1f} µs/GET")
    med = lambda k: st.median(r[k] for r in rows)
    print(f"{kind} median: added p50 {st.median(r[1]-r[0] for r in rows):+.3f} ms, "
          f"added p99 {st.median(r[3]-r[2] for r in rows):+.3f} ms, "
          f"throughput via/direct x{st.median(r[5]/r[4] for r in rows):.3f}, "
          f"kubeshard CPU {med(6):.1f} µs per proxied GET")
PY
