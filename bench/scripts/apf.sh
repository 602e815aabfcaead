#!/usr/bin/env bash
# API Priority and Fairness measurements, same binary, same run:
#
#   bench/scripts/apf.sh BIN [OUT_DIR]     (ROUNDS=3 SECS=8 OBJECTS=10000 FLOOD=64 PROBES=300
#                                           PARTS="exempt tenant flood" FLOOD_NICE= FLOOD_IDLE=
#                                           KEEPALIVE= CONTROL= PROBE_RT=)
#
# 1. APF off (A, --enable-priority-and-fairness=false) against on (B) for
#    GET and create, 64 clients, as the privileged user (classified
#    exempt) and as an ordinary tenant (`--impersonate tenant`, bound to
#    `edit`: classified global-default, seats taken and given back).
# 2. A flood of unpaged LISTs of OBJECTS ConfigMaps from one tenant
#    (FLOOD clients) while apf-probe.py measures another tenant's GET and
#    kube-scheduler's lease renewals, one at a time, PROBES each: before
#    the flood, under it with APF on, and under it with APF off.
#    FLOOD_NICE=19 runs the flood's load generator niced, so the server's
#    executors get the cores first, as when the flooding clients run on
#    other machines; FLOOD_IDLE=1 runs it SCHED_IDLE instead, which any
#    other thread preempts at once (nice 19 still gets its slice);
#    KEEPALIVE=1 makes the probe keep one connection per user open, as
#    client-go does, instead of one per request. The server audits the
#    probe's GETs (apf-audit.yaml), and the probe reports them as the
#    server timed them too. CONTROL=1 also probes a second server, idle,
#    on the same cores while the flood runs against the first: how slow
#    the machine alone makes the probe. PROBE_RT=1 runs the probe
#    real-time, so its own wait for a core is not in its figures.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${1:?usage: apf.sh BIN [OUT_DIR]}")
OUT=${2:-$(mktemp -d /tmp/apf-XXXX)}
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-8}; OBJECTS=${OBJECTS:-10000}; FLOOD=${FLOOD:-64}; PROBES=${PROBES:-300}
source "$(dirname "$0")/servers-common.sh"
OFF=$TMP/kubeshard-apf-off
printf '#!/bin/sh\nexec %s --enable-priority-and-fairness=false "$@"\n' "$BIN" >"$OFF"; chmod +x "$OFF"

# tenants URL: the users the load acts as may read and write ConfigMaps.
tenants() {
  for u in tenant calm flood; do
    curl -sf -X POST -H 'Content-Type: application/json' "$1/apis/rbac.authorization.k8s.io/v1/clusterrolebindings" \
      -d "{\"metadata\":{\"name\":\"bench-$u\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"edit\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"$u\"}]}" >/dev/null
  done
}

compare() {
  local name=$1; shift
  start "$OFF" a --storage memory; start "$BIN" b --storage memory
  tenants "$URL_a"; tenants "$URL_b"
  echo "== $name" | tee -a "$OUT/summary.txt"
  "$BENCH" --duration "${SECS}s" --output "$OUT/$name.json" --quiet --concurrency 64 "$@" \
    compare --a "$URL_a" --b "$URL_b" --a-pid "$PID_a" --b-pid "$PID_b" --rounds "$ROUNDS" "${WORKLOAD[@]}" \
    | tee -a "$OUT/summary.txt"
  stop_all
}

PARTS=" ${PARTS:-exempt tenant flood} "
if [[ $PARTS == *" exempt "* ]]; then
  WORKLOAD=(get --objects 100); compare get-exempt
  WORKLOAD=(create); compare create-exempt
fi
if [[ $PARTS == *" tenant "* ]]; then
  WORKLOAD=(get --objects 100); compare get-tenant --impersonate tenant
  WORKLOAD=(create); compare create-tenant --impersonate tenant --prefix t
fi

# lists URL: ConfigMap LISTs the server has answered.
lists() {
  curl -sf "$1/metrics" | awk '/^apiserver_request_total\{/ && /verb="LIST"/ && /resource="configmaps"/ {n += $2} END {print n + 0}'
}

# audited NAME BIN AUDIT_LOG: a server (URL_NAME) auditing the probe's GETs,
# with the probe's objects: ten ConfigMaps (on both shards, so the probe's
# GETs are served by the shard of their connection's core and by the
# other one) and kube-scheduler's Lease.
audited() {
  local name=$1 bin=$2 audit=$3 url
  start "$bin" "$name" --storage memory --audit-policy-file bench/scripts/apf-audit.yaml --audit-log-path "$audit"
  url=URL_$name; url=${!url}
  tenants "$url"
  for i in $(seq 0 9); do
    curl -sf -X POST -H 'Content-Type: application/json' "$url/api/v1/namespaces/default/configmaps" \
      -d "{\"metadata\":{\"name\":\"probe-$i\"},\"data\":{\"k\":\"v\"}}" >/dev/null
  done
  curl -sf -X POST -H 'Content-Type: application/json' "$url/apis/coordination.k8s.io/v1/namespaces/kube-system/leases" \
    -d '{"metadata":{"name":"kube-scheduler"},"spec":{"holderIdentity":"s","leaseDurationSeconds":15}}' >/dev/null
}

# probe URL AUDIT_LOG: apf-probe.py, real-time when PROBE_RT=1 (it then
# never waits for a core, as a client on a machine of its own).
probe() {
  AUDIT_LOG=$2 ${PROBE_RT:+chrt -f 10} python3 bench/scripts/apf-probe.py "$1" "$PROBES" | tee -a "$OUT/summary.txt"
}

flood() {
  local name=$1 bin=$2
  local audit=$OUT/$name-audit.log
  audited f "$bin" "$audit"
  echo "== $name: unloaded" | tee -a "$OUT/summary.txt"
  probe "$URL_f" "$audit"
  local sched=()
  [ -n "${FLOOD_NICE:-}" ] && sched=(nice -n "$FLOOD_NICE")
  [ -n "${FLOOD_IDLE:-}" ] && sched=(chrt -i 0)
  "${sched[@]}" "$BENCH" --url "$URL_f" --impersonate flood --concurrency "$FLOOD" --duration 600s --quiet \
    --output "$OUT/$name-flood.json" list --objects "$OBJECTS" --page-size 0 >"$OUT/$name-flood.txt" 2>&1 &
  local flood_pid=$!
  # The flood starts once its objects are in.
  for _ in $(seq 600); do
    n=$(curl -sf "$URL_f/metrics" | awk -F' ' '/^apiserver_storage_objects\{resource="configmaps"\}/ {print $2}')
    [ "${n:-0}" -ge "$OBJECTS" ] && break; sleep 0.2
  done
  sleep 2
  echo "== $name: under a LIST flood ($FLOOD clients)" | tee -a "$OUT/summary.txt"
  local lists0 t0; lists0=$(lists "$URL_f"); t0=$(date +%s.%N)
  probe "$URL_f" "$audit"
  # How hard the flood pressed while the probe ran, so runs compare.
  echo "flood LISTs/s during the probe: $(echo "($(lists "$URL_f") - $lists0) / ($(date +%s.%N) - $t0)" | bc -l | xargs printf '%.1f')" \
    | tee -a "$OUT/summary.txt"
  curl -sf "$URL_f/metrics" | grep -E '^apiserver_flowcontrol_(rejected|dispatched)_requests_total\{flow_schema="(global-default|system-leader-election)"' \
    | tee -a "$OUT/summary.txt" || true
  if [ -n "${CONTROL:-}" ]; then
    audited c "$bin" "$OUT/$name-control-audit.log"
    echo "== $name: an idle server on the same cores, under the same flood (control)" | tee -a "$OUT/summary.txt"
    probe "$URL_c" "$OUT/$name-control-audit.log"
  fi
  kill "$flood_pid" 2>/dev/null || true; wait "$flood_pid" 2>/dev/null || true
  stop_all
}

if [[ $PARTS == *" flood "* ]]; then
  flood flood-apf-on "$BIN"
  flood flood-apf-off "$OFF"
fi
echo "results in $OUT"
