#!/usr/bin/env bash
# What admission costs a create, with `kubeshard-bench compare` (A B A B,
# medians of per-round ratios B/A) on one kubeshard binary:
#
#   bench/scripts/admission.sh BIN [OUT_DIR]      (ROUNDS=3 SECS=8 ONLY="")
#
# ONLY="policy webhook" runs only the groups named (by their first
# comparison: plugins-configmaps, plugins-pods-bare, plugins-pods, policy,
# webhook).
#
# plugins-configmaps: ConfigMap creates, no admission plugin (A) vs kube's
#   default plugins (B);
# plugins-pods-bare: the same with Pods (ServiceAccount, Priority,
#   tolerations and PodSecurity have work to do);
# plugins-pods: Pods again, with a LimitRange and a quota in place on
#   both (LimitRanger defaults every pod, every create is charged);
# policy: ConfigMap creates with the default plugins (A) vs the same plus
#   one ValidatingAdmissionPolicy of three rules bound to ConfigMaps (B);
# webhook: ConfigMap creates with the default plugins (A) vs the same plus
#   one validating webhook for ConfigMaps (B) — `kubeshard-bench webhook`
#   on loopback, which prints its own time per review to webhook.log;
#   webhook-2000: the same at a fixed 2,000 creates/s, where latency is
#   the webhook path's and not the saturated cores' queueing.
# 64 clients over HTTP/1.1, in-memory storage, 2 shards; servers start
# fresh on loopback ports for each comparison and stop at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=$(realpath "${1:?usage: admission.sh BIN [OUT_DIR]}")
OUT=${2:-$(mktemp -d /tmp/admission-XXXX)}
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-8}
source "$(dirname "$0")/servers-common.sh"

post() { curl -sf -XPOST -H 'content-type: application/json' "$1$2" -d "$3" >/dev/null; }

# Every plugin kube turns on by default, for "no admission".
NONE=--disable-admission-plugins=ClusterTrustBundleAttest,PodTopologyLabels,MutatingAdmissionPolicy,NamespaceLifecycle,LimitRanger,ServiceAccount,TaintNodesByCondition,Priority,DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,PersistentVolumeClaimResize,RuntimeClass,CertificateApproval,CertificateSigning,CertificateSubjectRestriction,DefaultIngressClass,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota,PodSecurity,ValidatingAdmissionPolicy

compare() {
  local name=$1; shift
  echo "== $name" | tee -a "$OUT/summary.txt"
  "$BENCH" --duration "${SECS}s" --output "$OUT/$name.json" --quiet --concurrency 64 "$@" \
    compare --a "$URL_a" --b "$URL_b" --a-pid "$PID_a" --b-pid "$PID_b" --rounds "$ROUNDS" create \
    | tee -a "$OUT/summary.txt"
}

# Whether the group named $1 runs (ONLY unset: all do).
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

# Wait until the default ServiceAccount exists (pods need it).
settle() { for _ in $(seq 100); do curl -sf "$1/api/v1/namespaces/default/serviceaccounts/default" >/dev/null && return; sleep 0.1; done; }

if want plugins-configmaps; then
start "$BIN" a --storage memory "$NONE"; start "$BIN" b --storage memory
compare plugins-configmaps
stop_all
fi

echo '{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}' >"$TMP/pod.json"
POD=(--resource /api/v1/namespaces/default/pods --kind Pod --template "$TMP/pod.json")
if want plugins-pods-bare; then
start "$BIN" a --storage memory "$NONE"; start "$BIN" b --storage memory
settle "$URL_a"; settle "$URL_b"
compare plugins-pods-bare "${POD[@]}"
stop_all
fi

if want plugins-pods; then
start "$BIN" a --storage memory "$NONE"; start "$BIN" b --storage memory
for u in "$URL_a" "$URL_b"; do
  settle "$u"
  post "$u" /api/v1/namespaces/default/limitranges \
    '{"metadata":{"name":"limits"},"spec":{"limits":[{"type":"Container","default":{"cpu":"100m","memory":"64Mi"},"max":{"memory":"1Gi"}}]}}'
  post "$u" /api/v1/namespaces/default/resourcequotas \
    '{"metadata":{"name":"roomy"},"spec":{"hard":{"pods":"10000000","requests.cpu":"100000","limits.memory":"100Ti"}}}'
done
sleep 1
compare plugins-pods "${POD[@]}"
stop_all
fi

if want policy; then
start "$BIN" a --storage memory; start "$BIN" b --storage memory
post "$URL_b" /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies '{
  "metadata":{"name":"three-rules"},
  "spec":{"matchConstraints":{"resourceRules":[{"operations":["CREATE","UPDATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}]},
    "validations":[
      {"expression":"object.metadata.name.size() < 200","message":"name too long"},
      {"expression":"!has(object.metadata.labels) || !(\"forbidden\" in object.metadata.labels)"},
      {"expression":"!has(object.data) || object.data.size() < 100"}]}}'
post "$URL_b" /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings \
  '{"metadata":{"name":"three-rules"},"spec":{"policyName":"three-rules","validationActions":["Deny"]}}'
sleep 1
compare policy
stop_all
fi

if want webhook; then
# A CA and a serving certificate for the webhook.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=bench-ca \
  -keyout "$TMP/ca.key" -out "$TMP/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$TMP/hook.key" -out "$TMP/hook.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$TMP/san.ext"
openssl x509 -req -in "$TMP/hook.csr" -CA "$TMP/ca.crt" -CAkey "$TMP/ca.key" -CAcreateserial \
  -days 1 -extfile "$TMP/san.ext" -out "$TMP/hook.crt" 2>/dev/null
HOOK=$(port)
"$BENCH" webhook --port "$HOOK" --cert "$TMP/hook.crt" --key "$TMP/hook.key" 2>"$OUT/webhook.log" &
pids+=("$!")
start "$BIN" a --storage memory; start "$BIN" b --storage memory
CA=$(base64 -w0 <"$TMP/ca.crt")
post "$URL_b" /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations "{
  \"metadata\":{\"name\":\"bench\"},
  \"webhooks\":[{\"name\":\"admit.bench.example.com\",
    \"clientConfig\":{\"url\":\"https://127.0.0.1:$HOOK/admit\",\"caBundle\":\"$CA\"},
    \"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"configmaps\"]}],
    \"sideEffects\":\"None\",\"admissionReviewVersions\":[\"v1\"]}]}"
sleep 1
compare webhook
compare webhook-2000 --rate 2000
stop_all
# The webhook prints its own time per review every 10 s.
sleep 11
tail -3 "$OUT/webhook.log" | tee -a "$OUT/summary.txt"
fi
echo "results in $OUT"
