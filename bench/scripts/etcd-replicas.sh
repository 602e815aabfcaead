#!/usr/bin/env bash
# kubeshard on etcd (--storage etcd), measured the way issue 21 asks:
#
#   - creates/s and p99 through one replica and through two (two load
#     generators, half the clients each, one per replica), against etcd's
#     own rate for kube's create transaction (kubeshard-bench's etcd
#     target) and, when its binary is there, kube-apiserver on the same
#     etcd;
#   - GET and unpaged/paged LIST served from one replica's cache, and from
#     two replicas side by side;
#   - watch fan-out: 10k watchers on one replica, then split 5k + 5k over
#     two, while 100 ConfigMaps are updated at 200/s.
#
#   bench/scripts/etcd-replicas.sh KUBESHARD_BIN OUT
#       (ROUNDS=3 SECS=10 CLIENTS=256 PARTS="create read watch";
#        ETCD=etcd binary, default `etcd` on PATH;
#        KUBE_BIN_DIR=dir with kube-apiserver, default ~/.cache/kubeshard-kube/bin;
#        PIN=1: etcd alone on CPU 0, everything else on CPU 1 — etcd as on a
#        machine of its own, so its own rate and the servers' rates through
#        it share nothing but the loopback; SHARDS=executors per replica,
#        default 2, or 1 with PIN)
#
# KUBESHARD_BIN must be built with `--features etcd`. Everything listens on
# loopback and is stopped at the end (also on failure). Rounds interleave
# the targets; summary.txt has one line per run, results/*.json the rest.
set -euo pipefail
cd "$(dirname "$0")/../.."
KS=$(realpath "${1:?usage: etcd-replicas.sh KUBESHARD_BIN OUT}")
OUT=$(realpath -m "${2:?usage: etcd-replicas.sh KUBESHARD_BIN OUT}")
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-10}; CLIENTS=${CLIENTS:-256}
PARTS=${PARTS:-create read watch}
ETCD=${ETCD:-etcd}
KUBE_BIN_DIR=${KUBE_BIN_DIR:-$HOME/.cache/kubeshard-kube/bin}
PIN=${PIN:-}
if [ -n "$PIN" ]; then
  ON_ETCD=(taskset -c 0); ON_REST=(taskset -c 1); SHARDS=${SHARDS:-1}
else
  ON_ETCD=(); ON_REST=(); SHARDS=${SHARDS:-2}
fi
mkdir -p "$OUT/results"
cargo build --release -q -p kubeshard-bench --features kubeshard-bench/etcd
BENCH=$PWD/target/release/kubeshard-bench
TMP=$(mktemp -d); pids=()
log() { echo "$*" >&2; }
source scripts/lib/clusters.sh
# stop_pids's waits answer the killed processes' status: not an error here.
trap 'set +e; stop_pids; rm -rf "$TMP"' EXIT

ep=$(free_port); pp=$(free_port)
ETCD_URL=http://127.0.0.1:$ep
"${ON_ETCD[@]}" "$ETCD" --data-dir "$TMP/etcd" --name bench --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
  --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
  --initial-cluster "bench=http://127.0.0.1:$pp" --quota-backend-bytes 8589934592 >"$OUT/etcd.log" 2>&1 &
ETCD_PID=$!; pids+=($ETCD_PID)
for _ in $(seq 100); do curl -sf "$ETCD_URL/health" >/dev/null && break; sleep 0.1; done

# replica NAME: a kubeshard replica on the etcd; sets URL_NAME, PID_NAME.
replica() {
  local name=$1 p; p=$(free_port)
  # Under a prefix of their own: etcd's own runs write /registry/..., which
  # the replicas' watch would otherwise mirror (their work, not etcd's).
  "${ON_REST[@]}" "$KS" --storage etcd --etcd-servers "$ETCD_URL" --etcd-prefix /ks-registry \
    --insecure-port "$p" --secure-port 0 \
    --bind-address 127.0.0.1 --shards "$SHARDS" --data-dir "$TMP/$name" >"$OUT/$name.log" 2>&1 &
  local pid=$!; pids+=("$pid")
  for _ in $(seq 300); do
    curl -sf "http://127.0.0.1:$p/readyz" >/dev/null && break
    kill -0 "$pid" 2>/dev/null || { log "$name exited; see $OUT/$name.log"; exit 1; }
    sleep 0.1
  done
  printf -v "URL_$name" 'http://127.0.0.1:%s' "$p"
  printf -v "PID_$name" '%s' "$pid"
}
replica a; replica b

KAS_KC=
if [ -x "$KUBE_BIN_DIR/kube-apiserver" ]; then
  gen_certs "$TMP/pki"
  ap=$(free_port)
  "${ON_REST[@]}" "$KUBE_BIN_DIR/kube-apiserver" --etcd-servers "$ETCD_URL" --etcd-prefix /kube-registry \
    --secure-port "$ap" --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
    --service-cluster-ip-range 10.0.0.0/24 --authorization-mode Node,RBAC \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$TMP/pki/sa.pub" --service-account-signing-key-file "$TMP/pki/sa.key" \
    --client-ca-file "$TMP/pki/ca.crt" --tls-cert-file "$TMP/pki/apiserver.crt" \
    --tls-private-key-file "$TMP/pki/apiserver.key" --cert-dir "$TMP/kas-certs" \
    --max-requests-inflight 3000 --max-mutating-requests-inflight 1000 \
    >"$OUT/kube-apiserver.log" 2>&1 &
  KAS_PID=$!; pids+=($KAS_PID)
  KAS_KC=$TMP/kas.kubeconfig
  write_kubeconfig "$KAS_KC" "https://127.0.0.1:$ap" "$TMP/pki"
  wait_ready "$KAS_KC" "$KAS_PID" "$OUT/kube-apiserver.log" kube-apiserver
else
  log "no kube-apiserver in $KUBE_BIN_DIR: its runs are left out"
fi

# one NAME PID ARGS...: one load generator run, its headline to summary.txt.
one() {
  local name=$1 pid=$2; shift 2
  "${ON_REST[@]}" "$BENCH" --quiet --duration "${SECS}s" --server-pid "$pid" --output "$OUT/results/$name.json" "$@" \
    | grep -E '^\*' | sed "s/^/$name /" | tee -a "$OUT/summary.txt"
}

# two NAME ARGS_A -- ARGS_B: both replicas loaded at once, by one
# generator each.
two() {
  local name=$1; shift
  local a=() b=() seen=
  for x in "$@"; do
    if [ "$x" = -- ]; then seen=1; elif [ -z "$seen" ]; then a+=("$x"); else b+=("$x"); fi
  done
  one "$name-a" "$PID_a" "${a[@]}" & local j=$!
  one "$name-b" "$PID_b" "${b[@]}"
  wait $j
}

half=$((CLIENTS / 2))
for r in $(seq "$ROUNDS"); do
  for part in $PARTS; do
    case $part in
      create)
        # Each round starts at another target: etcd slows as its database
        # grows, which would otherwise always cost the same target.
        for i in 0 1 2 3; do
          case $(( (i + r) % 4 )) in
            0) one "etcd-txn-create-$r" "$ETCD_PID" --concurrency "$CLIENTS" etcd --endpoint "$ETCD_URL" create ;;
            1) one "ks1-create-$r" "$PID_a" --concurrency "$CLIENTS" --http2 --connections 16 --url "$URL_a" create ;;
            2) two "ks2-create-$r" --concurrency "$half" --http2 --connections 8 --url "$URL_a" create \
                 -- --concurrency "$half" --http2 --connections 8 --url "$URL_b" create ;;
            3) if [ -n "$KAS_KC" ]; then
                 one "kas-create-$r" "$KAS_PID" --concurrency "$CLIENTS" --http2 --connections 16 --kubeconfig "$KAS_KC" create
               fi ;;
          esac
        done
        ;;
      read)
        one "ks1-get-$r" "$PID_a" --concurrency 64 --url "$URL_a" get --objects 100
        two "ks2-get-$r" --concurrency 64 --url "$URL_a" get --objects 100 -- --concurrency 64 --url "$URL_b" get --objects 100
        one "ks1-list-$r" "$PID_a" --concurrency 4 --object-size 200 --url "$URL_a" --namespace "big$r" list --objects 10000 --page-size 500
        two "ks2-list-$r" --concurrency 4 --object-size 200 --url "$URL_a" --namespace "big$r" list --objects 10000 --page-size 500 \
          -- --concurrency 4 --object-size 200 --url "$URL_b" --namespace "big$r-b" list --objects 10000 --page-size 500
        ;;
      watch)
        one "ks1-watch-$r" "$PID_a" --rate 200 --http2 --connections 16 --url "$URL_a" --namespace "w$r" watch --watchers 10000 --objects 100
        two "ks2-watch-$r" --rate 100 --http2 --connections 8 --url "$URL_a" --namespace "wa$r" watch --watchers 5000 --objects 100 \
          -- --rate 100 --http2 --connections 8 --url "$URL_b" --namespace "wb$r" watch --watchers 5000 --objects 100
        ;;
    esac
  done
done
log "results in $OUT (summary.txt)"
