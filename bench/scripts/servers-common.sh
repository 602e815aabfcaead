# Shared by ab.sh, admission.sh, aggregator.sh and callgrind-etcd.sh (sourced, not run):
# builds kubeshard-bench (BENCH), makes OUT (where logs go) and TMP
# (scratch), and provides a free loopback port, kubeshard servers started
# fresh on one (ready before returning), and stopping them. Everything
# started is in `pids`, which the EXIT trap kills.
mkdir -p "$OUT"
cargo build --release -q -p kubeshard-bench
BENCH=$PWD/target/release/kubeshard-bench
TMP=$(mktemp -d); pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start BIN NAME [flags...]: sets URL_NAME and PID_NAME
start() {
  local bin=$1 name=$2; shift 2
  local p; p=$(port)
  "$bin" --insecure-port "$p" --secure-port 0 --bind-address 127.0.0.1 --shards 2 \
    --data-dir "$TMP/$name" "$@" >"$OUT/$name.log" 2>&1 &
  local pid=$!; pids+=("$pid")
  for _ in $(seq 300); do
    curl -sf "http://127.0.0.1:$p/readyz" >/dev/null && break
    kill -0 "$pid" 2>/dev/null || { echo "$name exited; see $OUT/$name.log" >&2; exit 1; }
    sleep 0.1
  done
  printf -v "URL_$name" 'http://127.0.0.1:%s' "$p"
  printf -v "PID_$name" '%s' "$pid"
}

stop_all() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; pids=(); }

# etcd_start: an etcd (Debian's, on PATH) for the servers (ETCD_URL), stopped
# with them; its log in OUT.
etcd_start() {
  local c p; c=$(port); p=$(port)
  ETCD_URL=http://127.0.0.1:$c
  etcd --data-dir "$TMP/etcd-$c" --name ab --listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
    --listen-peer-urls "http://127.0.0.1:$p" --initial-advertise-peer-urls "http://127.0.0.1:$p" \
    --initial-cluster "ab=http://127.0.0.1:$p" --quota-backend-bytes 8589934592 >"$OUT/etcd.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do curl -sf "$ETCD_URL/health" >/dev/null && break; sleep 0.1; done
}
