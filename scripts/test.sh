#!/usr/bin/env bash
# The whole kubeshard test suite: formatting, lints, unit and property
# tests, HTTP integration tests against the real binary, and the kubectl
# scenarios. Installs what it needs on a fresh Debian machine.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v nghttp >/dev/null 2>&1 || need_apt+=(nghttp2-client)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
# The etcd backend and the etcd target of kubeshard-bench (cargo feature `etcd`) need protoc to
# build and an etcd binary for its end-to-end test.
command -v protoc >/dev/null 2>&1 || need_apt+=(protobuf-compiler)
command -v etcd >/dev/null 2>&1 || need_apt+=(etcd-server)
command -v kubectl >/dev/null 2>&1 || [ -x /usr/bin/kubectl ] || {
  echo "kubectl is required (kubectl 1.32 at /usr/bin/kubectl on the reference machine)" >&2
  exit 1
}
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${need_apt[@]}"
  else
    sudo apt-get update -qq && sudo apt-get install -y -qq "${need_apt[@]}"
  fi
fi
if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install cargo-nextest --locked
fi

# A clean CI clone builds once: incremental state would only cost disk.
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL=0
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --features etcd,kubeshard-bench/etcd -- -D warnings
cargo nextest run --workspace --features etcd,kubeshard-bench/etcd --no-fail-fast
