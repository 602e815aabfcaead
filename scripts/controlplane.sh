#!/usr/bin/env bash
# The real control plane on kubeshard: kube-scheduler and
# kube-controller-manager (each under its own identity, authorized by the
# bootstrap RBAC policy, electing leaders on Leases) against kubeshard with
# all its own controllers off (garbage collector, namespace, service
# accounts, root CA publisher, CSR signer: the controller-manager's job),
# and fake kubelets (scripts/conformance/fakenode.py --run-pods: nodes that
# report bound pods Running, Job pods Succeeded, and confirm graceful
# deletions). Then the workload scenario a user would try, each step with
# kubectl against the admin kubeconfig:
#
#   1. a Deployment of 3 gets a ReplicaSet and 3 pods bound to nodes and Running;
#   2. scaling it to 10 completes;
#   3. a rolling update (new image) completes, leaving two ReplicaSets;
#   4. a Job runs to completion;
#   5. a StatefulSet of 3 creates db-0, db-1, db-2 in that order;
#   6. a DaemonSet puts one pod on every node;
#   7. deleting the Deployment garbage-collects its ReplicaSets and pods.
#
# With --density PODS the scenario is instead a density run (the 1,000-node
# benchmark of BENCHMARKS.md): NODES fake nodes (default 1000), both
# components' client rate limits raised to COMPONENT_QPS (default 300, so
# the API server rather than client throttling is what is measured), and
# scripts/controlplane/density.py creating PODS pods through 10
# Deployments; it records pods bound per second and created→bound /
# created→Running latencies, the server's CPU time and RSS over the run
# (kube: kube-apiserver + etcd), and request latency by verb as the
# scheduler's and controller-manager's client-go saw it (latency.py).
#
# The same runs against kube-apiserver + etcd for comparison. Not run by CI
# (it needs the real binaries); tests/control_plane.rs runs it for kubeshard
# when they are present.
#
#   scripts/controlplane.sh [--targets kubeshard,kube] [--nodes N] [--density PODS] [--out DIR] [BIN_DIR]
#
# BIN_DIR (default ~/.cache/kubeshard-kube/bin, as ../shared/tools/build-kube.sh
# builds it) holds kube-scheduler, kube-controller-manager and, for the
# baseline, etcd and kube-apiserver; when they are absent the script says so
# and exits 0. KUBESHARD_BIN (default target/release/kubeshard) is the server
# under test. Each step's outcome and time go to OUT/TARGET/steps.tsv, a
# markdown table to standard output; the exit status is 1 if any step
# failed on kubeshard.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
TARGETS=${TARGETS:-kubeshard,kube}
KUBESHARD_BIN=${KUBESHARD_BIN:-$repo/target/release/kubeshard}
NODES=${NODES:-3}
OUT_DIR=${OUT_DIR:-}
STEP_TIMEOUT=${STEP_TIMEOUT:-180}
DENSITY=${DENSITY:-}
BIN_DIR=""
while [ $# -gt 0 ]; do
  case $1 in
    --targets) TARGETS=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --density) DENSITY=$2; shift 2 ;;
    --out) OUT_DIR=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) BIN_DIR=$1; shift ;;
  esac
done
BIN_DIR=${BIN_DIR:-$HOME/.cache/kubeshard-kube/bin}
if [ -n "$DENSITY" ]; then
  case " $* " in *" --nodes "*) ;; *) [ "$NODES" = 3 ] && NODES=1000 ;; esac
  COMPONENT_QPS=${COMPONENT_QPS:-300}
fi
case $KUBESHARD_BIN in /*) ;; *) KUBESHARD_BIN=$repo/$KUBESHARD_BIN ;; esac

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
skip() { echo "controlplane: skipped: $*"; exit 0; }
for b in kube-scheduler kube-controller-manager; do
  [ -x "$BIN_DIR/$b" ] || skip "$BIN_DIR/$b not found (build it with ../shared/tools/build-kube.sh)"
done
for t in openssl python3 kubectl curl; do command -v $t >/dev/null || skip "$t not found on PATH"; done
[ -x "$KUBESHARD_BIN" ] || skip "$KUBESHARD_BIN not found (run \`cargo build --release\`)"

OUT_DIR=${OUT_DIR:-$repo/target/controlplane/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT_DIR"; OUT_DIR=$(cd "$OUT_DIR" && pwd)
KUBESHARD_ARGS="--controllers=-garbagecollector,-namespace,-serviceaccount,-root-ca-cert-publisher,-csrsigning"
# shellcheck source=lib/clusters.sh
. "$repo/scripts/lib/clusters.sh"
trap 'stop_pids' EXIT
trap 'log "interrupted"; exit 130' INT TERM

k() { kubectl --kubeconfig "$KC" --request-timeout=30s "$@"; }

# until SECONDS_MAX COMMAND...: runs COMMAND each half second until it succeeds.
until_ok() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.5
  done
}

running_pods() { # SELECTOR N: exactly N pods, all bound and Running
  local out
  out=$(k get pods -l "$1" -o jsonpath='{range .items[*]}{.spec.nodeName} {.status.phase}{"\n"}{end}') || return 1
  [ "$(grep -c . <<< "$out")" -eq "$2" ] && ! grep -qv '^[^ ]\+ Running$' <<< "$out"
}
none_left() { # KIND SELECTOR
  [ -z "$(k get "$1" -l "$2" -o name)" ]
}
rs_count() { [ "$(k get rs -l app=web -o name | grep -c .)" -eq "$1" ]; }
job_complete() {
  [ "$(k get job pi -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}')" = True ]
}
ds_everywhere() {
  local want have nodes
  want=$(k get nodes -o name | grep -c .)
  have=$(k get pods -l app=agent -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | grep -c .)
  nodes=$(k get pods -l app=agent -o name | grep -c .)
  [ "$have" -eq "$want" ] && [ "$nodes" -eq "$want" ] && running_pods app=agent "$want"
}
ordered() { # the ADDED order of the StatefulSet's pods, as watched
  [ "$(grep -o 'db-[0-9]' "$1" | awk '!seen[$0]++' | tr '\n' ' ')" = "db-0 db-1 db-2 " ]
}

step() { # NAME COMMAND...: runs and records one step
  local name=$1 t0=$SECONDS rc; shift
  "$@"; rc=$?
  printf '%s\t%s\t%s\n' "$name" "$([ $rc -eq 0 ] && echo pass || echo FAIL)" $((SECONDS - t0)) >> "$d/steps.tsv"
  log "$target: $name: $([ $rc -eq 0 ] && echo pass || echo FAIL) ($((SECONDS - t0)) s)"
}

s_deploy() {
  k create deployment web --image=registry.k8s.io/pause:3.10 --replicas=3 >/dev/null &&
    until_ok "$STEP_TIMEOUT" running_pods app=web 3 && rs_count 1
}
s_scale() {
  k scale deployment web --replicas=10 >/dev/null &&
    k rollout status deployment/web --timeout="${STEP_TIMEOUT}s" >/dev/null &&
    until_ok "$STEP_TIMEOUT" running_pods app=web 10
}
s_rollout() {
  k set image deployment/web pause=registry.k8s.io/pause:3.9 >/dev/null &&
    k rollout status deployment/web --timeout="${STEP_TIMEOUT}s" >/dev/null &&
    until_ok "$STEP_TIMEOUT" running_pods app=web 10 && rs_count 2
}
s_job() {
  k create job pi --image=registry.k8s.io/pause:3.10 >/dev/null &&
    until_ok "$STEP_TIMEOUT" job_complete
}
s_statefulset() {
  local w=$d/statefulset.watch
  k get pods -l app=db --watch --output-watch-events -o name > "$w" 2>&1 & local watcher=$!
  sleep 1
  k apply -f - >/dev/null <<'YAML' || { kill $watcher; return 1; }
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {clusterIP: None, selector: {app: db}, ports: [{port: 5432}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: registry.k8s.io/pause:3.10}]}
YAML
  until_ok "$STEP_TIMEOUT" running_pods app=db 3; local rc=$?
  kill $watcher 2>/dev/null; wait $watcher 2>/dev/null
  [ $rc -eq 0 ] && ordered "$w"
}
s_daemonset() {
  k apply -f - >/dev/null <<'YAML' &&
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: registry.k8s.io/pause:3.10}]}
YAML
    until_ok "$STEP_TIMEOUT" ds_everywhere
}
s_gc() {
  k delete deployment web --wait=false >/dev/null &&
    until_ok "$STEP_TIMEOUT" none_left rs app=web && until_ok "$STEP_TIMEOUT" none_left pods app=web
}

# ---- the density run ---------------------------------------------------------
server_cpu_ticks() { local t=0 p; for p in $SERVER_PIDS; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $t; }
server_kib() { # FIELD (VmRSS, VmHWM): summed over the server's processes
  local t=0 p; for p in $SERVER_PIDS; do t=$((t + $(awk -v f="$1:" '$1 == f {print $2}' "/proc/$p/status"))); done; echo $t
}
scrape() { # PORT FILE: a component's /metrics, as the admin
  curl -sk --cert "$d/pki/admin.crt" --key "$d/pki/admin.key" "https://127.0.0.1:$1/metrics" > "$2"
}
run_density() {
  local here=$repo/scripts/controlplane cpu0 cpu1 hz
  hz=$(getconf CLK_TCK)
  until_ok 120 [ "$(k get nodes -o name | grep -c .)" -ge "$NODES" ] || log "$target: fewer than $NODES nodes"
  scrape "$KCM_PORT" "$d/kcm-before.prom"; scrape "$SCHED_PORT" "$d/sched-before.prom"
  cpu0=$(server_cpu_ticks)
  log "$target: density run: $DENSITY pods on $NODES nodes"
  python3 "$here/density.py" "$KC" --pods "$DENSITY" --timeout 1200 > "$d/density.json" 2> "$d/density.log"
  cpu1=$(server_cpu_ticks)
  scrape "$KCM_PORT" "$d/kcm-after.prom"; scrape "$SCHED_PORT" "$d/sched-after.prom"
  python3 "$here/latency.py" "$d/kcm-before.prom" "$d/sched-before.prom" -- "$d/kcm-after.prom" "$d/sched-after.prom" > "$d/latency.json"
  python3 - "$d" "$(( (cpu1 - cpu0) ))" "$hz" "$(server_kib VmRSS)" "$(server_kib VmHWM)" <<'PY'
import json, sys
d, ticks, hz, rss, hwm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
out = json.load(open(d + '/density.json'))
out['server_cpu_seconds'] = round(ticks / hz, 2)
out['server_rss_mib'] = round(rss / 1024, 1)
out['server_peak_rss_mib'] = round(hwm / 1024, 1)
out['client_latency'] = json.load(open(d + '/latency.json'))
json.dump(out, open(d + '/result.json', 'w'), indent=1)
print(json.dumps(out))
PY
}

run_target() { # TARGET
  target=$1; d=$OUT_DIR/$1
  mkdir -p "$d"; : > "$d/steps.tsv"
  log "== $target"
  case $target in
    kube) COMPONENTS=own start_kube "$d" ;;
    kubeshard) COMPONENTS=own start_kubeshard "$d" "$d/pki" ;;
  esac || { log "$target: the server did not start"; stop_pids; return 1; }
  python3 "$repo/scripts/conformance/fakenode.py" "$KC" ks-node --nodes "$NODES" --pods 110 --run-pods \
    > "$d/fakenode.log" 2>&1 & pids+=($!)
  until_ok 60 grep -q 'are up' "$d/fakenode.log" || { log "$target: the fake nodes did not come up"; tail -n 5 "$d/fakenode.log"; }
  until_ok 120 k -n default get serviceaccount default || log "$target: no default ServiceAccount after 120 s"
  if [ -n "$DENSITY" ]; then
    run_density >&2
    stop_pids
    return 0
  fi
  step "Deployment of 3: ReplicaSet and 3 pods bound and Running" s_deploy
  step "scale to 10" s_scale
  step "rolling update (new image) completes" s_rollout
  step "Job runs to completion" s_job
  step "StatefulSet creates db-0, db-1, db-2 in order" s_statefulset
  step "DaemonSet: one pod per node" s_daemonset
  step "deleting the Deployment collects its ReplicaSets and pods" s_gc
  k get pods,rs,deploy,job,sts,ds -o wide > "$d/final.txt" 2>&1
  k get leases -n kube-system > "$d/leases.txt" 2>&1
  stop_pids
}

for t in ${TARGETS//,/ }; do
  case $t in
    kube) for b in etcd kube-apiserver; do
            [ -x "$BIN_DIR/$b" ] || { log "target kube skipped: $BIN_DIR/$b not found"; continue 2; }
          done ;;
    kubeshard) ;;
    *) echo "unknown target $t (kubeshard, kube)" >&2; exit 2 ;;
  esac
  run_target "$t"
done

if [ -n "$DENSITY" ]; then
  python3 "$repo/scripts/controlplane/report.py" "$OUT_DIR" ${TARGETS//,/ }
  exit 0
fi

# The table: one row per step, one column per target.
python3 - "$OUT_DIR" ${TARGETS//,/ } <<'PY'
import os, sys
out, targets = sys.argv[1], [t for t in sys.argv[2:] if os.path.exists(os.path.join(sys.argv[1], t, 'steps.tsv'))]
rows = {}
for t in targets:
    for line in open(os.path.join(out, t, 'steps.tsv')):
        name, result, secs = line.rstrip('\n').split('\t')
        rows.setdefault(name, {})[t] = '%s (%s s)' % (result, secs)
print('| step | ' + ' | '.join(targets) + ' |')
print('| --- |' + ' --- |' * len(targets))
for name, r in rows.items():
    print('| %s | %s |' % (name, ' | '.join(r.get(t, '-') for t in targets)))
PY
! grep -q FAIL "$OUT_DIR/kubeshard/steps.tsv" 2>/dev/null
