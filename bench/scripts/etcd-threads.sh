#!/usr/bin/env bash
# Where a create through kubeshard on etcd spends its CPU, thread by
# thread, against etcd's own create transaction — the question behind
# issue 21's "≥ 90 % of etcd's put rate": etcd alone on CPU 0, kubeshard
# (--shards 1) and the load generator on CPU 1, as etcd-replicas.sh PIN=1.
# Each round runs both targets for SECS at CLIENTS clients, in alternating
# order (etcd slows as its database grows), and reads every thread's CPU
# time from /proc before and after: microseconds per create for
# kubeshard's executor, its etcd-client thread, the load generator and
# etcd, and how busy each core was.
#
#   bench/scripts/etcd-threads.sh KUBESHARD_BIN OUT     (ROUNDS=3 SECS=10 CLIENTS=256)
#
# KUBESHARD_BIN must be built with `--features etcd`; Debian's etcd on PATH.
# ETCD_THREAD_NICE=n renices kubeshard's etcd-client thread (an experiment:
# -10 and 10 both lowered the rate, BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
KS=$(realpath "${1:?usage: etcd-threads.sh KUBESHARD_BIN OUT}")
OUT=$(realpath -m "${2:?usage: etcd-threads.sh KUBESHARD_BIN OUT}")
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-10}; CLIENTS=${CLIENTS:-256}
mkdir -p "$OUT"
cargo build --release -q -p kubeshard-bench --features kubeshard-bench/etcd
BENCH=$PWD/target/release/kubeshard-bench
TMP=$(mktemp -d); pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

ep=$(free_port); pp=$(free_port); kp=$(free_port)
ETCD_URL=http://127.0.0.1:$ep
taskset -c 0 etcd --data-dir "$TMP/etcd" --name b --listen-client-urls "$ETCD_URL" \
  --advertise-client-urls "$ETCD_URL" --listen-peer-urls "http://127.0.0.1:$pp" \
  --initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "b=http://127.0.0.1:$pp" \
  --quota-backend-bytes 8589934592 >"$OUT/etcd.log" 2>&1 &
EP=$!; pids+=($EP)
for _ in $(seq 100); do curl -sf "$ETCD_URL/health" >/dev/null && break; sleep 0.1; done
# Under a prefix of its own, so etcd's own runs (/registry/...) are not mirrored.
taskset -c 1 "$KS" --storage etcd --etcd-servers "$ETCD_URL" --etcd-prefix /ks-registry \
  --insecure-port "$kp" --secure-port 0 --bind-address 127.0.0.1 --shards 1 \
  --data-dir "$TMP/ks" >"$OUT/kubeshard.log" 2>&1 &
KP=$!; pids+=($KP)
for _ in $(seq 300); do curl -sf "http://127.0.0.1:$kp/readyz" >/dev/null && break; sleep 0.1; done
# ETCD_THREAD_NICE=n: the etcd-client thread reniced (an experiment).
if [ -n "${ETCD_THREAD_NICE:-}" ]; then
  for t in /proc/$KP/task/*; do
    [ "$(cat "$t/comm")" = etcd ] && renice -n "$ETCD_THREAD_NICE" -p "${t##*/}" >/dev/null
  done
fi

# CPU ticks (user + system) of every kubeshard thread, of etcd and of the
# whole machine's CPU 0 and 1.
snap() {
  for t in /proc/$KP/task/*; do echo "ks:$(tr ' ' _ <"$t/comm") $(awk '{print $14 + $15}' "$t/stat")"; done
  echo "etcd $(awk '{print $14 + $15}' /proc/$EP/stat)"
}
# run NAME ARGS...: one generator run on CPU 1 between two snapshots.
run() {
  local name=$1; shift
  snap >"$OUT/$name.before"
  /usr/bin/time -f "%U %S" -o "$OUT/$name.time" taskset -c 1 "$BENCH" --quiet --duration "${SECS}s" \
    --concurrency "$CLIENTS" --output "$OUT/$name.json" "$@" >/dev/null
  snap >"$OUT/$name.after"
}
taskset -c 1 "$BENCH" --quiet --duration 3s --concurrency "$CLIENTS" --http2 --connections 16 \
  --url "http://127.0.0.1:$kp" create >/dev/null   # warm-up
for r in $(seq "$ROUNDS"); do
  ks=(--http2 --connections 16 --url "http://127.0.0.1:$kp" create)
  own=(etcd --endpoint "$ETCD_URL" create)
  if (( r % 2 )); then run "ks-$r" "${ks[@]}"; run "etcd-$r" "${own[@]}"
  else run "etcd-$r" "${own[@]}"; run "ks-$r" "${ks[@]}"; fi
done

python3 - "$OUT" "$ROUNDS" "$SECS" <<'PY' | tee "$OUT/summary.txt"
import json, statistics, sys
out, rounds, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
hz = 100  # USER_HZ
def ticks(path):
    m = {}
    for line in open(path):
        name, t = line.split()
        m[name] = m.get(name, 0) + int(t)
    return m
def run(name):
    ok = json.load(open(f"{out}/{name}.json"))["operations"][0]["ok"]
    a, b = ticks(f"{out}/{name}.before"), ticks(f"{out}/{name}.after")
    us = {k: (b[k] - a.get(k, 0)) * 1e6 / hz / ok for k in b}
    gen = sum(map(float, open(f"{out}/{name}.time").read().split()))
    us["generator"] = gen * 1e6 / ok
    return ok / secs, us
ratios = []
for r in range(1, rounds + 1):
    ks_rate, ks = run(f"ks-{r}")
    etcd_rate, own = run(f"etcd-{r}")
    ratios.append(ks_rate / etcd_rate)
    threads = "  ".join(f"{k.removeprefix('ks:').replace('etcd', 'etcd-client')} {v:.1f}"
                        for k, v in sorted(ks.items()) if v >= 0.5 and k != "etcd")
    cpu1 = sum(v for k, v in ks.items() if k != "etcd") * ks_rate / 1e6
    print(f"round {r}: kubeshard {ks_rate:.0f}/s, etcd's own {etcd_rate:.0f}/s, ×{ks_rate / etcd_rate:.3f}")
    print(f"  through kubeshard, µs per create: {threads}, etcd {ks['etcd']:.1f}; "
          f"CPU 1 {cpu1:.0%} busy, etcd {ks['etcd'] * ks_rate / 1e6:.0%}")
    print(f"  etcd alone: etcd {own['etcd']:.1f} µs per create ({own['etcd'] * etcd_rate / 1e6:.0%} busy), generator {own['generator']:.1f}")
print(f"median ×{statistics.median(ratios):.3f} of etcd's own rate over {rounds} rounds")
PY
