#!/usr/bin/env bash
# Conformance harness: runs the upstream e2e conformance specs (by default
# the 99 "[sig-api-machinery] ... [Conformance]" ones) against kubeshard and,
# as the baseline, against a kubelet-less kube-apiserver cluster, and writes
# CONFORMANCE.md (a table spec | kube-apiserver | kubeshard, the counts and
# each chunk's wall time). Not run by CI: the baseline alone takes ~45 min.
#
#   scripts/conformance.sh [options] [BIN_DIR]
#
# BIN_DIR holds e2e.test (and, for the baseline, etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler), as ../shared/tools/build-kube.sh
# builds them; default ~/.cache/kubeshard-kube/bin. When they are absent the
# script says so and exits 0.
#
# Options (each also an environment variable):
#   --targets LIST     TARGETS        comma-separated, of kube, kubeshard-proto,
#                                     kubeshard-json (default: all three)
#   --kubeshard PATH   KUBESHARD_BIN  default target/release/kubeshard
#   --out DIR          OUT_DIR        raw results (default target/conformance/<UTC time>)
#   --focus REGEX      FOCUS          default '\[sig-api-machinery\].*\[Conformance\]'
#   --chunks N         CHUNKS         default 10
#   --parallel N       PARALLEL       chunks run at once against one server
#                                     (default 0: every non-[Serial] chunk at
#                                     once; the [Serial] chunk runs alone,
#                                     after them). Most specs only wait: each
#                                     of the ~25 that need a running pod waits
#                                     5 min for a Deployment no kubelet runs
#                                     (two wait 10 min for a running pod), so
#                                     one chunk at a time takes over two
#                                     hours; all at once, 42 min for the
#                                     baseline on 2 cores. Upstream runs the
#                                     non-[Serial] specs in parallel too.
#   --timeout DUR      CHUNK_TIMEOUT  ginkgo timeout per chunk (default 120m)
#   --md FILE          CONFORMANCE_MD the report to (re)write (default
#                                     CONFORMANCE.md at the repo root; "-": none)
#                      KUBESHARD_ARGS extra flags for kubeshard
#
# Every server runs on free loopback ports with generated certificates; the
# script stops every process it started when it ends, however it ends. One
# fake node (ks-fake-node, Ready, zero pod capacity) is created in each
# cluster and its Lease renewed: no pod ever runs, so the specs that need a
# running pod (webhooks, aggregated API servers) fail on both servers.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
here=$repo/scripts/conformance

TARGETS=${TARGETS:-kube,kubeshard-proto,kubeshard-json}
KUBESHARD_BIN=${KUBESHARD_BIN:-$repo/target/release/kubeshard}
OUT_DIR=${OUT_DIR:-}
FOCUS=${FOCUS:-'\[sig-api-machinery\].*\[Conformance\]'}
CHUNKS=${CHUNKS:-10}
PARALLEL=${PARALLEL:-0}
CHUNK_TIMEOUT=${CHUNK_TIMEOUT:-120m}
CONFORMANCE_MD=${CONFORMANCE_MD:-$repo/CONFORMANCE.md}
KUBESHARD_ARGS=${KUBESHARD_ARGS:-}
BIN_DIR=""

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case $1 in
    --targets) TARGETS=$2; shift 2 ;;
    --kubeshard) KUBESHARD_BIN=$2; shift 2 ;;
    --out) OUT_DIR=$2; shift 2 ;;
    --focus) FOCUS=$2; shift 2 ;;
    --chunks) CHUNKS=$2; shift 2 ;;
    --parallel) PARALLEL=$2; shift 2 ;;
    --timeout) CHUNK_TIMEOUT=$2; shift 2 ;;
    --md) CONFORMANCE_MD=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "unknown option $1" >&2; usage >&2; exit 2 ;;
    *) BIN_DIR=$1; shift ;;
  esac
done
BIN_DIR=${BIN_DIR:-$HOME/.cache/kubeshard-kube/bin}
case $KUBESHARD_BIN in /*) ;; *) KUBESHARD_BIN=$repo/$KUBESHARD_BIN ;; esac

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*"; }
skip() { echo "conformance: skipped: $*"; exit 0; }

# ---- what can run -----------------------------------------------------------
[ -x "$BIN_DIR/e2e.test" ] || skip "$BIN_DIR/e2e.test not found (build it with ../shared/tools/build-kube.sh)"
for t in openssl python3 kubectl curl; do
  command -v $t >/dev/null || skip "$t not found on PATH"
done
targets=()
for t in ${TARGETS//,/ }; do
  case $t in
    kube)
      missing=""
      for b in etcd kube-apiserver kube-controller-manager kube-scheduler; do
        [ -x "$BIN_DIR/$b" ] || missing="$missing $b"
      done
      if [ -n "$missing" ]; then echo "conformance: target kube skipped:$missing not found in $BIN_DIR"; continue; fi ;;
    kubeshard-proto|kubeshard-json)
      if [ ! -x "$KUBESHARD_BIN" ]; then
        echo "conformance: target $t skipped: $KUBESHARD_BIN not found (run \`cargo build --release\`)"; continue
      fi ;;
    *) echo "unknown target $t (kube, kubeshard-proto, kubeshard-json)" >&2; exit 2 ;;
  esac
  targets+=("$t")
done
[ ${#targets[@]} -gt 0 ] || skip "no target can run (TARGETS=$TARGETS)"

OUT_DIR=${OUT_DIR:-$repo/target/conformance/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT_DIR"; OUT_DIR=$(cd "$OUT_DIR" && pwd)
echo $$ > "$OUT_DIR/conformance.pid"
log "results in $OUT_DIR; targets: ${targets[*]} (stop: kill $$)"

# shellcheck source=lib/clusters.sh
. "$repo/scripts/lib/clusters.sh"

# The e2e.test processes of running chunks (their pids are in files, as a
# chunk runs in a subshell), then the chunks' subshells, then the servers.
stop_all() {
  local f p
  for f in "$OUT_DIR"/*/chunk-*/e2e.pid "$OUT_DIR"/*/chunk-*/spec-*/e2e.pid; do
    [ -f "$f" ] || continue
    p=$(cat "$f")
    grep -qa e2e.test "/proc/$p/cmdline" 2>/dev/null && kill -TERM "$p" 2>/dev/null
  done
  for p in "${running[@]}"; do kill -TERM "$p" 2>/dev/null; done
  sleep 1
  for f in "$OUT_DIR"/*/chunk-*/e2e.pid "$OUT_DIR"/*/chunk-*/spec-*/e2e.pid; do
    [ -f "$f" ] || continue
    p=$(cat "$f")
    grep -qa e2e.test "/proc/$p/cmdline" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  done
  stop_pids
}
running=()
trap 'stop_all' EXIT
trap 'log "interrupted"; exit 130' INT TERM

# ---- one chunk ---------------------------------------------------------------
e2e_flags() { # TARGET
  echo --provider=skeleton --allowed-not-ready-nodes=-1 --num-nodes=1 --minStartupPods=-1 --e2e-verify-service-account=false
  [ "$1" = kubeshard-json ] && echo --kube-api-content-type=application/json
}

# Each JUnit report lists all ~7900 specs of the suite (~6 MB): keep ginkgo's
# compressed, drop the copy e2e.test writes to --report-dir (junit_01.xml).
slim_reports() { # DIR
  rm -f "$1/junit_01.xml"
  [ -f "$1/junit.xml" ] && gzip -f "$1/junit.xml"
  return 0
}

run_chunk() { # TARGET DIR K
  local target=$1 d=$2 k=$3 cd=$2/chunk-$3 start end rc n
  mkdir -p "$cd"
  n=$(wc -l < "$OUT_DIR/chunks/chunk-$k.specs")
  log "$target: chunk $k ($n specs) started"
  start=$(date +%s%N)
  # In the background and waited for, so that a signal to this script is
  # handled at once rather than when the chunk ends.
  # shellcheck disable=SC2046
  "$BIN_DIR/e2e.test" --kubeconfig="$KC" $(e2e_flags "$target") \
    --ginkgo.focus="$(cat "$OUT_DIR/chunks/chunk-$k.focus")" \
    --ginkgo.junit-report="$cd/junit.xml" --report-dir="$cd" \
    --ginkgo.timeout="$CHUNK_TIMEOUT" --ginkgo.no-color > "$cd/e2e.log" 2>&1 &
  local e2e=$!
  echo $e2e > "$cd/e2e.pid"
  wait $e2e; rc=$?
  local crashed=0
  [ -s "$cd/junit.xml" ] || crashed=1
  slim_reports "$cd"
  if [ $crashed = 1 ]; then
    # A spec can crash e2e.test itself (a failure outside ginkgo's
    # goroutine), taking the chunk's other results with it: run the chunk's
    # specs again one at a time, so that only the crashing one is lost.
    log "$target: chunk $k: e2e.test exited $rc without a report; running its specs one at a time"
    local i=0 sd
    while IFS= read -r _; do
      i=$((i + 1)); sd=$cd/spec-$i; mkdir -p "$sd"
      # shellcheck disable=SC2046
      "$BIN_DIR/e2e.test" --kubeconfig="$KC" $(e2e_flags "$target") \
        --ginkgo.focus="$(cat "$OUT_DIR/chunks/chunk-$k.d/$i.focus")" \
        --ginkgo.junit-report="$sd/junit.xml" --report-dir="$sd" \
        --ginkgo.timeout="$CHUNK_TIMEOUT" --ginkgo.no-color < /dev/null > "$sd/e2e.log" 2>&1 &
      e2e=$!
      echo $e2e > "$sd/e2e.pid"
      wait $e2e
      [ -s "$sd/junit.xml" ] || log "$target: chunk $k: spec $i crashed e2e.test: $(sed -n "${i}p" "$OUT_DIR/chunks/chunk-$k.specs")"
      slim_reports "$sd"
    done < "$OUT_DIR/chunks/chunk-$k.specs"
  fi
  end=$(date +%s%N)
  printf '%s\t%s\t%s\t%s\n' "$k" "$n" $(( (end - start + 500000000) / 1000000000 )) "$rc" > "$cd/timing.tsv"
  log "$target: chunk $k done in $(cut -f3 "$cd/timing.tsv") s (exit $rc): $(grep -E '^(Ran|SUCCESS|FAIL)' "$cd/e2e.log" | tr '\n' ' ')"
}

run_target() { # TARGET
  local target=$1 d=$OUT_DIR/$1 k fake p n
  mkdir -p "$d"
  log "== $target"
  local t0=$SECONDS
  case $target in
    kube) start_kube "$d" ;;
    *) start_kubeshard "$d" ;;
  esac || { log "$target: the server did not start; its chunks are not run"; stop_pids; return 1; }
  echo "$KC" > "$d/kubeconfig-path"
  kubectl --kubeconfig "$KC" get --raw /version > "$d/server-version.json" 2>/dev/null
  python3 "$here/fakenode.py" "$KC" > "$d/fakenode.log" 2>&1 & fake=$!; pids+=($fake)
  for _ in $(seq 60); do
    grep -q 'is up' "$d/fakenode.log" && break
    kill -0 $fake 2>/dev/null || break
    sleep 0.5
  done
  if ! grep -q 'is up' "$d/fakenode.log"; then
    log "$target: the fake node could not be created:"; tail -n 5 "$d/fakenode.log"
  fi
  # Pods need their namespace's default ServiceAccount (kube-controller-
  # manager's, for the baseline): wait for the first one.
  for _ in $(seq 60); do
    kubectl --kubeconfig "$KC" -n default get serviceaccount default >/dev/null 2>&1 && break
    sleep 1
  done
  kubectl --kubeconfig "$KC" -n default get serviceaccount default >/dev/null 2>&1 \
    || log "$target: warning: no ServiceAccount default/default after 60 s"
  kubectl --kubeconfig "$KC" get nodes -o wide > "$d/nodes.txt" 2>&1
  # e2e's chunks. The e2e command, for CONFORMANCE.md:
  { echo "# the fake node (Ready, zero pod capacity; renews its Lease every 10 s until killed)"
    echo "python3 scripts/conformance/fakenode.py KUBECONFIG"
    echo "# e2e.test, once per chunk"
    echo "e2e.test --kubeconfig=KUBECONFIG $(e2e_flags "$target" | tr '\n' ' ')--ginkgo.focus=CHUNK_REGEX --ginkgo.junit-report=DIR/junit.xml --report-dir=DIR --ginkgo.timeout=$CHUNK_TIMEOUT --ginkgo.no-color"
  } >> "$d/commands.txt"
  running=()
  for k in $(seq 1 $((SERIAL_FROM - 1))); do
    while :; do
      n=0
      for p in "${running[@]}"; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done
      [ $n -lt "$PARALLEL" ] && break
      sleep 2
    done
    run_chunk "$target" "$d" "$k" &
    running+=($!)
    sleep 1
  done
  for p in "${running[@]}"; do wait "$p"; done
  running=()
  for k in $(seq "$SERIAL_FROM" "$NCHUNKS"); do
    run_chunk "$target" "$d" "$k"
  done
  cat "$d"/chunk-*/timing.tsv > "$d/timings.tsv" 2>/dev/null
  printf 'total\t-\t%s\t-\n' $((SECONDS - t0)) >> "$d/timings.tsv"
  stop_pids
  log "$target: done in $((SECONDS - t0)) s"
}

# ---- main --------------------------------------------------------------------
log "listing the specs that match $FOCUS"
read -r NCHUNKS SERIAL_FROM < <(python3 "$here/specs.py" "$BIN_DIR/e2e.test" "$FOCUS" "$CHUNKS" "$OUT_DIR/chunks") \
  || { echo "listing the specs failed" >&2; exit 1; }
[ -n "${NCHUNKS:-}" ] || { echo "listing the specs failed" >&2; exit 1; }
[ "$PARALLEL" -gt 0 ] 2>/dev/null || PARALLEL=$((SERIAL_FROM > 1 ? SERIAL_FROM - 1 : 1))
log "$(wc -l < "$OUT_DIR/chunks/specs.txt") specs in $NCHUNKS chunks (serial from chunk $SERIAL_FROM), $PARALLEL at once"
{
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null)$( [ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ] && echo +dirty)"
  echo "e2e=$("$BIN_DIR/e2e.test" --version 2>/dev/null | head -n 1)"
  echo "focus=$FOCUS"
  echo "chunks=$NCHUNKS"
  echo "parallel=$PARALLEL"
  echo "targets=${targets[*]}"
  echo "bin_dir=$BIN_DIR"
} > "$OUT_DIR/meta.env"

for t in "${targets[@]}"; do run_target "$t"; done

if [ "$CONFORMANCE_MD" != "-" ]; then
  python3 "$here/report.py" "$OUT_DIR" --md "$CONFORMANCE_MD" && log "wrote $CONFORMANCE_MD"
fi
python3 "$here/report.py" "$OUT_DIR" --md "$OUT_DIR/CONFORMANCE.md" --no-merge >/dev/null && log "wrote $OUT_DIR/CONFORMANCE.md"
