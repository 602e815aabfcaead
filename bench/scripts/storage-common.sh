# Shared by storage.sh and storage-onecore.sh (sourced, not run): waiting
# for readiness, stopping, etcd 3.4 on loopback, and one result row.
# Expects TMP (a scratch directory) and the pids array of the caller.

ready() { # ready URL [LOG]: waits up to 20 s; on failure shows the log's end
  for _ in $(seq 400); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "not ready: $1" >&2; [ -n "${2:-}" ] && tail -n 20 "$2" >&2; exit 1
}
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

start_etcd() { # start_etcd: a fresh etcd on 127.0.0.1:23790, its pid in ETP
  rm -rf "$TMP/etcd"
  etcd --data-dir "$TMP/etcd" --listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
    --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
    --initial-cluster default=http://127.0.0.1:23800 --quota-backend-bytes 8589934592 >"$TMP/etcd.log" 2>&1 & ETP=$!; pids+=($ETP)
  ready http://127.0.0.1:23790/health "$TMP/etcd.log"
}

cpu_seconds() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat"; }

row() { # row JSON SERVER_CPU_SECONDS LABEL...: the labels, creates/s, p50 and p99 ms,
        # then server and client cores when SERVER_CPU_SECONDS is not empty
  python3 - "$@" <<'PY'
import json, sys
f, cpu, labels = sys.argv[1], sys.argv[2], sys.argv[3:]
d = json.load(open(f))
o = next(o for o in d["operations"] if o["name"] == d["primary"])
errs = sum(o["errors"].values()) if o["errors"] else 0
cores = []
if cpu:
    cores = ["server_cores", round(float(cpu) / d["elapsed_s"], 2), "client_cores", round(d["client"]["cpu_cores"], 2)]
print(*labels, round(o["throughput_per_s"]), o["latency_ms"]["p50"], o["latency_ms"]["p99"], *cores,
      f"errors={errs}" if errs else "")
PY
}
