# Shared by the harnesses that start real clusters on loopback
# (scripts/conformance.sh, scripts/controlplane.sh): process bookkeeping,
# certificates and kubeconfigs, and the two kinds of server — kubeshard, and
# the baseline etcd + kube-apiserver (+ kube-controller-manager and
# kube-scheduler). Expects log(), BIN_DIR and KUBESHARD_BIN from the caller.
# Starting a server sets SERVER_PIDS, its processes (kube: etcd and
# kube-apiserver), for CPU and memory figures.
# shellcheck shell=bash

# ---- process bookkeeping ----------------------------------------------------
pids=()
stop_pids() { # in the reverse order of their start: clients before servers, etcd last
  local i p n
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[$i]}
    kill -TERM "$p" 2>/dev/null || continue
    for n in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  pids=()
}
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_ready KUBECONFIG PID LOG NAME: /readyz through the kubeconfig, up to 120 s.
wait_ready() {
  local kc=$1 pid=$2 logf=$3 name=$4 i
  for i in $(seq 240); do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "$name exited before it was ready; the end of $logf:"; tail -n 30 "$logf"; return 1
    fi
    if [ -f "$kc" ] && kubectl --kubeconfig "$kc" --request-timeout=5s get --raw /readyz >/dev/null 2>&1; then
      log "$name is ready"; return 0
    fi
    sleep 0.5
  done
  log "$name not ready after 120 s; the end of $logf:"; tail -n 30 "$logf"
  kubectl --kubeconfig "$kc" get --raw '/readyz?verbose' 2>&1 | grep -v ' ok$' | tail -n 20
  return 1
}

# ---- the baseline: etcd + kube-apiserver + kube-controller-manager + kube-scheduler
gen_certs() {
  local d=$1
  mkdir -p "$d"
  (
    cd "$d" || exit 1
    ec="-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
    openssl req -x509 $ec -keyout ca.key -out ca.crt -days 3650 -subj "/CN=kubeshard-conformance-ca" 2>/dev/null
    cat > server.ext <<EOF
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
EOF
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' > client.ext
    openssl req -new $ec -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 -extfile server.ext -out apiserver.crt 2>/dev/null
    client() { # FILE SUBJECT
      openssl req -new $ec -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 -extfile client.ext -out "$1.crt" 2>/dev/null
    }
    client admin "/O=system:masters/CN=kubernetes-admin"
    client scheduler "/CN=system:kube-scheduler"
    client controller-manager "/CN=system:kube-controller-manager"
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key 2>/dev/null
    openssl pkey -in sa.key -pubout -out sa.pub 2>/dev/null
  ) || return 1
  [ -s "$d/admin.crt" ] && [ -s "$d/apiserver.crt" ] && [ -s "$d/sa.pub" ]
}

write_kubeconfig() { # FILE SERVER PKI_DIR [CLIENT: admin, scheduler, controller-manager]
  local who=${4:-admin}
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: conformance
  cluster:
    server: $2
    certificate-authority: $3/ca.crt
users:
- name: $who
  user:
    client-certificate: $3/$who.crt
    client-key: $3/$who.key
contexts:
- name: conformance
  context: {cluster: conformance, user: $who}
current-context: conformance
EOF
}

# start_kube DIR: etcd and kube-apiserver, then the components (see
# start_components) -> sets KC, the admin kubeconfig.
start_kube() {
  local d=$1 pki=$1/pki ep pp ap
  gen_certs "$pki" || { log "certificate generation failed"; return 1; }
  ep=$(free_port); pp=$(free_port); ap=$(free_port)
  local etcd_cmd=("$BIN_DIR/etcd" --data-dir "$d/etcd" --client-url "http://127.0.0.1:$ep"
    --peer-url "http://127.0.0.1:$pp" --unsafe-no-fsync)
  # --enable-aggregator-routing: webhooks, CRD conversion and aggregated
  # APIs resolve a Service to its endpoints (none here: no pod runs), never
  # to a ClusterIP in 10.0.0.0/24, which nothing here would answer.
  local kas_cmd=("$BIN_DIR/kube-apiserver" --etcd-servers "http://127.0.0.1:$ep"
    --secure-port "$ap" --bind-address 127.0.0.1 --advertise-address 127.0.0.1
    --service-cluster-ip-range 10.0.0.0/24 --authorization-mode Node,RBAC
    --service-account-issuer https://kubernetes.default.svc.cluster.local
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key"
    --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key"
    --enable-aggregator-routing=true --allow-privileged=true --cert-dir "$d/kas-certs")
  KC=$d/admin.kubeconfig
  write_kubeconfig "$KC" "https://127.0.0.1:$ap" "$pki"
  {
    echo "# certificates: openssl, CA + serving (SAN 127.0.0.1, localhost, kubernetes.default.svc...) +"
    echo "# admin client (O=system:masters) + RSA service-account key: see gen_certs in scripts/lib/clusters.sh"
    echo "# etcd"; printf '%q ' "${etcd_cmd[@]}"; echo
    echo "# kube-apiserver"; printf '%q ' "${kas_cmd[@]}"; echo
  } > "$d/commands.txt"
  "${etcd_cmd[@]}" > "$d/etcd.log" 2>&1 & pids+=($!)
  local etcd_pid=$! i
  SERVER_PIDS="$etcd_pid"
  for i in $(seq 100); do
    curl -sf "http://127.0.0.1:$ep/health" >/dev/null 2>&1 && break
    kill -0 $etcd_pid 2>/dev/null || { log "etcd exited:"; tail -n 20 "$d/etcd.log"; return 1; }
    sleep 0.2
  done
  "${kas_cmd[@]}" > "$d/kube-apiserver.log" 2>&1 & pids+=($!)
  SERVER_PIDS="$SERVER_PIDS $!"
  wait_ready "$KC" $! "$d/kube-apiserver.log" kube-apiserver || return 1
  start_components "$d" "https://127.0.0.1:$ap"
}

# start_components DIR SERVER: kube-controller-manager and kube-scheduler
# against SERVER, with the certificates in DIR/pki. COMPONENTS=admin (the
# default): both as the admin, without leader election; COMPONENTS=own:
# each under its own identity (system:kube-scheduler,
# system:kube-controller-manager, and a service account per controller),
# authorized by the bootstrap RBAC policy, electing leaders on Leases;
# COMPONENTS=none: neither. KCM_ARGS: more controller-manager flags;
# COMPONENT_QPS: both components' client rate limit (burst twice that).
# Sets KCM_PORT and SCHED_PORT (their secure ports, for /metrics).
start_components() {
  local d=$1 server=$2 pki=$1/pki kp sp kc_kcm kc_sched elect
  case ${COMPONENTS:-admin} in
    none) return 0 ;;
    own) kc_kcm=$d/controller-manager.kubeconfig; kc_sched=$d/scheduler.kubeconfig; elect=true
         write_kubeconfig "$kc_kcm" "$server" "$pki" controller-manager
         write_kubeconfig "$kc_sched" "$server" "$pki" scheduler ;;
    *) kc_kcm=$d/admin.kubeconfig; kc_sched=$kc_kcm; elect=false
       write_kubeconfig "$kc_kcm" "$server" "$pki" ;;
  esac
  kp=$(free_port); sp=$(free_port); KCM_PORT=$kp; SCHED_PORT=$sp
  local qps=()
  [ -n "${COMPONENT_QPS:-}" ] && qps=(--kube-api-qps "$COMPONENT_QPS" --kube-api-burst $((2 * COMPONENT_QPS)))
  local kcm_cmd=("$BIN_DIR/kube-controller-manager" --kubeconfig "$kc_kcm"
    --authentication-kubeconfig "$kc_kcm" --authorization-kubeconfig "$kc_kcm"
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt"
    --use-service-account-credentials=true
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key"
    --leader-elect=$elect --bind-address 127.0.0.1 --secure-port "$kp" --cert-dir "$d/kcm-certs" "${qps[@]}")
  # shellcheck disable=SC2206
  [ -n "${KCM_ARGS:-}" ] && kcm_cmd+=($KCM_ARGS)
  local sched_cmd=("$BIN_DIR/kube-scheduler" --kubeconfig "$kc_sched"
    --authentication-kubeconfig "$kc_sched" --authorization-kubeconfig "$kc_sched"
    --leader-elect=$elect --bind-address 127.0.0.1 --secure-port "$sp" --cert-dir "$d/sched-certs" "${qps[@]}")
  {
    echo "# kube-controller-manager"; printf '%q ' "${kcm_cmd[@]}"; echo
    echo "# kube-scheduler"; printf '%q ' "${sched_cmd[@]}"; echo
  } >> "$d/commands.txt"
  "${kcm_cmd[@]}" > "$d/kube-controller-manager.log" 2>&1 & pids+=($!)
  "${sched_cmd[@]}" > "$d/kube-scheduler.log" 2>&1 & pids+=($!)
  return 0
}

# start_kubeshard DIR [PKI]: kubeshard on its own generated certificates,
# or with PKI (a gen_certs directory) on those, then the components (see
# start_components; COMPONENTS=none by default here) -> sets KC.
start_kubeshard() {
  local d=$1 pki=${2:-} i pid
  local cmd=("$KUBESHARD_BIN" --secure-port 0 --secure-port-file "$d/port" --bind-address 127.0.0.1
    --data-dir "$d/data" --storage memory)
  if [ -n "$pki" ]; then
    gen_certs "$pki" || { log "certificate generation failed"; return 1; }
    cmd+=(--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key"
      --client-ca-file "$pki/ca.crt" --service-account-signing-key-file "$pki/sa.key")
  fi
  # shellcheck disable=SC2206
  [ -n "$KUBESHARD_ARGS" ] && cmd+=($KUBESHARD_ARGS)
  { echo "# kubeshard"; printf '%q ' "${cmd[@]}"; echo; } > "$d/commands.txt"
  echo "$("$KUBESHARD_BIN" --version 2>&1 | head -n 1), binary of $(date -u -r "$KUBESHARD_BIN" +%Y-%m-%dT%H:%MZ)" > "$d/version.txt"
  "${cmd[@]}" > "$d/kubeshard.log" 2>&1 & pid=$!; pids+=($pid); SERVER_PIDS=$pid
  KC=$d/data/admin.kubeconfig
  for i in $(seq 120); do
    [ -s "$d/port" ] && [ -s "$KC" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.25
  done
  if [ -n "$pki" ] && [ -s "$d/port" ]; then
    KC=$d/admin.kubeconfig
    write_kubeconfig "$KC" "https://127.0.0.1:$(cat "$d/port")" "$pki"
  fi
  wait_ready "$KC" $pid "$d/kubeshard.log" kubeshard || return 1
  [ -n "$pki" ] || return 0
  COMPONENTS=${COMPONENTS:-none} start_components "$d" "https://127.0.0.1:$(cat "$d/port")"
}
