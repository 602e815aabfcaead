#!/usr/bin/env python3
"""Generates core/src/protobuf/schema_generated.rs, the table the protobuf
request decoder walks.

Why a generator: Kubernetes' protobuf wire format is defined by the
generated.proto files of k8s.io/api and k8s.io/apimachinery. The `k8s-pb`
crate carries those schemas as prost-generated Rust, so its
`#[prost(KIND, optional|repeated, tag = "N")]` attributes are a faithful,
machine-readable copy of every tag and wire kind. JSON names are not in there
(prost snake_cases them), so they are taken from `k8s-openapi`, whose
Deserialize impls spell every JSON key. Only derived facts (tags, kinds,
names) are emitted; no source text is copied.

Run from the workspace root (re-runnable; output is deterministic):

    python3 core/tools/gen_protobuf_schema.py            # writes the table
    python3 core/tools/gen_protobuf_schema.py --report   # also prints the
                                                         # name fixes and
                                                         # inline fields

Both crates must be in the cargo registry: `cargo fetch` in the workspace
pulls k8s-pb (a dev-dependency of kubeshard-core); k8s-openapi is not a
dependency, so fetch it once through a throwaway manifest:

    cargo new -q /tmp/k8s-openapi-fetch && cd /tmp/k8s-openapi-fetch &&
      cargo add -q k8s-openapi@=0.26.1 --features v1_34 && cargo fetch
Optional inputs: core/tools/protobuf_go_zero.txt (written by
protobuf_oracle.py) and protobuf_go_zero_manual.txt (read off Go types the
oracle cannot reach) list the fields whose zero value Go's JSON encoding
omits; a field in neither keeps its wire value.
"""

import argparse
import glob
import os
import re
import sys

K8S_PB = "k8s-pb-0.9.0"
K8S_OPENAPI = "k8s-openapi-0.26.1"
OPENAPI_VERSION = "v1_34"
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "src", "protobuf", "schema_generated.rs")
GO_ZERO = os.path.join(HERE, "protobuf_go_zero.txt")
GO_ZERO_MANUAL = os.path.join(HERE, "protobuf_go_zero_manual.txt")

# The kinds kubeshard serves (or will soon); everything they reference is
# pulled in transitively. Every kind's XList is included when it exists.
ROOTS = {
    "api.core.v1": ["Namespace", "ConfigMap", "Secret", "ServiceAccount", "Pod", "Service",
                    "Endpoints", "Event", "Node", "Binding", "PodTemplate",
                    "ReplicationController", "PersistentVolumeClaim", "PersistentVolume",
                    "LimitRange", "ResourceQuota", "ComponentStatus"],
    "api.apps.v1": ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "ControllerRevision"],
    "api.discovery.v1": ["EndpointSlice"],
    "api.networking.v1": ["Ingress", "IngressClass", "NetworkPolicy", "IPAddress", "ServiceCIDR"],
    "api.autoscaling.v2": ["HorizontalPodAutoscaler"],
    "api.certificates.v1": ["CertificateSigningRequest"],
    "api.admissionregistration.v1": ["MutatingWebhookConfiguration",
                                     "ValidatingWebhookConfiguration",
                                     "ValidatingAdmissionPolicy",
                                     "ValidatingAdmissionPolicyBinding"],
    "api.flowcontrol.v1": ["FlowSchema", "PriorityLevelConfiguration"],
    "api.resource.v1": ["DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"],
    "apiextensions_apiserver.pkg.apis.apiextensions.v1": ["CustomResourceDefinition"],
    "kube_aggregator.pkg.apis.apiregistration.v1": ["APIService"],
    "api.storage.v1": ["StorageClass", "CSIDriver", "CSINode", "CSIStorageCapacity",
                       "VolumeAttachment", "VolumeAttributesClass"],
    "api.scheduling.v1": ["PriorityClass"],
    "api.node.v1": ["RuntimeClass"],
    "api.coordination.v1": ["Lease"],
    "api.batch.v1": ["Job", "CronJob"],
    "api.authorization.v1": ["SelfSubjectAccessReview", "SubjectAccessReview",
                             "LocalSubjectAccessReview", "SelfSubjectRulesReview"],
    "api.authentication.v1": ["TokenReview", "TokenRequest", "SelfSubjectReview"],
    "api.rbac.v1": ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"],
    "api.autoscaling.v1": ["Scale", "HorizontalPodAutoscaler"],
    "api.events.v1": ["Event"],
    "api.policy.v1": ["Eviction", "PodDisruptionBudget"],
    "apimachinery.pkg.apis.meta.v1": ["DeleteOptions", "Status", "WatchEvent",
                                      "PartialObjectMetadata"],
}
# Kinds that every group version registers (metav1.AddToGroupVersion), so a
# body may name any apiVersion; "" in the table means "any".
ANY_GROUP_VERSION = {"DeleteOptions", "Status", "WatchEvent"}
# Kinds with no Resource impl in k8s-pb whose module names no other version.
API_VERSION = {"PartialObjectMetadata": "meta.k8s.io/v1"}

META = "apimachinery.pkg.apis.meta.v1"
# Messages whose JSON form is not an object; the decoder renders them.
SPECIAL = {
    META + ".Time": "Time",
    META + ".MicroTime": "MicroTime",
    META + ".Duration": "Duration",
    META + ".FieldsV1": "FieldsV1",
    "apimachinery.pkg.util.intstr.IntOrString": "IntOrString",
    "apimachinery.pkg.api.resource.Quantity": "Quantity",
    "apimachinery.pkg.api.resource.QuantityValue": "Quantity",
    "apimachinery.pkg.runtime.RawExtension": "RawExtension",
}
SCALARS = {"string": "Str", "bytes": "Bytes", "bool": "Bool", "int32": "I32",
           "int64": "I64", "double": "F64"}

STRUCT_RE = re.compile(r"^pub struct (\w+) \{")
PROST_RE = re.compile(r"^\s*#\[prost\((.*)\)\]\s*$")
FIELD_RE = re.compile(r"^\s*pub (?:r#)?(\w+):\s*(.*)$", re.S)
RESOURCE_RE = re.compile(r"^impl crate::Resource for (\w+) \{")


def registry_dir(name, override):
    if override:
        return override
    hits = sorted(glob.glob(os.path.expanduser(f"~/.cargo/registry/src/*/{name}")))
    if not hits:
        sys.exit(f"{name} is not in the cargo registry; fetch it first (see --help)")
    return hits[-1]


def resolve(module, rust_type):
    """Turns a prost type path into a dotted message name, or None."""
    t = re.sub(r"\s+", "", rust_type)
    t = t.replace(",>", ">")
    for wrapper in ("::core::option::Option<", "::prost::alloc::vec::Vec<",
                    "::prost::alloc::boxed::Box<"):
        while t.startswith(wrapper):
            t = t[len(wrapper):-1].strip()
    if t.startswith("::prost::alloc::collections::BTreeMap<"):
        t = t[len("::prost::alloc::collections::BTreeMap<"):-1]
        t = t.split(",", 1)[1]
    parts = t.split("::")
    mod = list(module)
    while parts and parts[0] == "super":
        mod.pop()
        parts.pop(0)
    return ".".join(mod + parts)


def parse_k8s_pb(root):
    messages, resources = {}, {}
    for path in sorted(glob.glob(os.path.join(root, "src", "**", "mod.rs"), recursive=True)):
        module = os.path.relpath(os.path.dirname(path), os.path.join(root, "src")).split(os.sep)
        lines = open(path, encoding="utf-8").read().split("\n")
        i, doc, current = 0, [], None
        while i < len(lines):
            line = lines[i]
            if line.startswith("///"):
                doc.append(line)
            m = STRUCT_RE.match(line)
            if m:
                current = {"name": ".".join(module + [m.group(1)]), "fields": [],
                           "nullable": any("+protobuf.nullable=true" in d for d in doc)}
                messages[current["name"]] = current
            elif line == "}":
                current = None
            if not line.startswith("///"):
                doc = [] if not line.startswith("#[") else doc
            m = RESOURCE_RE.match(line)
            if m:
                body = "\n".join(lines[i:i + 6])
                api_version = re.search(r'API_VERSION: &\'static str = "([^"]*)"', body).group(1)
                resources[".".join(module + [m.group(1)])] = api_version
            pm = PROST_RE.match(line)
            if pm and current is not None:
                decl = lines[i + 1]
                j = i + 1
                while not decl.rstrip().endswith(",") or decl.count("<") != decl.count(">"):
                    j += 1
                    decl = decl + " " + lines[j].strip()
                fm = FIELD_RE.match(decl)
                current["fields"].append(parse_field(module, pm.group(1), fm.group(1),
                                                     fm.group(2).rstrip(",").strip()))
                i = j
            i += 1
    return messages, resources


def parse_field(module, attr, rust_name, rust_type):
    tag = int(re.search(r'tag = "(\d+)"', attr).group(1))
    field = {"tag": tag, "rust": rust_name, "card": "One", "ref": None}
    m = re.search(r'btree_map = "string, (\w+)"', attr)
    if m:
        field["card"] = "Map"
        kind = m.group(1)
    else:
        kind = attr.split(",")[0].split("=")[0].strip()
        if re.search(r"\brepeated\b", attr):
            field["card"] = "Rep"
    if kind == "message":
        field["ref"] = resolve(module, rust_type)
        field["kind"] = "message"
    elif kind in SCALARS:
        field["kind"] = kind
    else:
        sys.exit(f"unsupported prost kind {kind!r} in {attr}")
    return field


def openapi_index(root):
    """Maps module -> lowercased struct name -> set of JSON keys."""
    index = {}
    base = os.path.join(root, "src", OPENAPI_VERSION)
    for path in glob.glob(os.path.join(base, "**", "*.rs"), recursive=True):
        text = open(path, encoding="utf-8").read()
        m = re.search(r"^pub struct (\w+)", text, re.M)
        if not m:
            continue
        module = ".".join(os.path.relpath(os.path.dirname(path), base).split(os.sep))
        keys = set(re.findall(r'"([A-Za-z0-9_$-]+)" => Field::Key_', text))
        index.setdefault(module, {})[m.group(1).lower()] = keys
    return index


def camel(snake):
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def reachable(messages, roots):
    seen, order, todo = set(), [], list(roots)
    while todo:
        name = todo.pop(0)
        if name in seen or name in SPECIAL:
            continue
        if name not in messages:
            sys.exit(f"unknown message {name}")
        seen.add(name)
        order.append(name)
        for f in messages[name]["fields"]:
            if f["ref"]:
                todo.append(f["ref"])
    return order


def assign_json_names(messages, order, oa_index, report):
    """Sets f["json"], and f["card"] = "Inline" where Go embeds the struct
    with `json:",inline"` (k8s-openapi then lists the embedded struct's keys
    on the parent). An embedded struct has no k8s-openapi type of its own,
    so its fields are named from the parent's keys."""
    keys_of = {}
    for name in order:
        module, short = name.rsplit(".", 1)
        keys_of[name] = oa_index.get(module, {}).get(short.lower())
    for name in order:
        keys = keys_of[name]
        for f in messages[name]["fields"]:
            sub = messages.get(f["ref"] or "", {}).get("fields")
            if keys is None or f["card"] != "One" or not sub or normalized(keys).get(
                    f["rust"].replace("_", "")):
                continue
            if covered(sub, normalized(keys), messages):
                f["card"] = "Inline"
                report["inline"].append(f"{name}.{f['rust']} -> {f['ref']}")
                if keys_of.get(f["ref"]) is None:
                    keys_of[f["ref"]] = keys
    for name in order:
        keys = keys_of[name]
        if keys is None:
            report["no_openapi"].append(name)
        for f in messages[name]["fields"]:
            guess = camel(f["rust"])
            f["json"] = guess
            if keys is None or f["card"] == "Inline":
                continue
            exact = normalized(keys).get(f["rust"].replace("_", ""))
            if exact is None:
                report["unmatched"].append(f"{name}.{f['rust']}: kept {guess}")
            elif exact != guess:
                report["renamed"].append(f"{name}.{f['rust']}: {guess} -> {exact}")
                f["json"] = exact
            else:
                f["json"] = exact


def covered(fields, keys, messages, depth=0):
    """Whether every field is one of the parent's JSON keys, or itself an
    embedded struct whose fields are (inlines nest: NamedRuleWithOperations
    inlines RuleWithOperations, which inlines Rule)."""
    def one(f):
        if keys.get(f["rust"].replace("_", "")):
            return True
        sub = messages.get(f["ref"] or "", {}).get("fields")
        return bool(sub) and depth < 4 and covered(sub, keys, messages, depth + 1)
    return all(one(f) for f in fields)


def normalized(keys):
    return {k.lower().replace("_", ""): k for k in keys}


def load_go_zero():
    """Fields whose zero value Go's JSON encoding drops (omitempty on a
    non-pointer field), as `message.jsonName` lines."""
    out = set()
    for path in (GO_ZERO, GO_ZERO_MANUAL):
        if not os.path.exists(path):
            continue
        for line in open(path, encoding="utf-8"):
            line = line.split("#", 1)[0].strip()
            if line:
                out.add(line)
    return out


def ty_of(f, messages, index):
    if f["kind"] != "message":
        return SCALARS[f["kind"]]
    if f["ref"] in SPECIAL:
        return SPECIAL[f["ref"]]
    target = messages[f["ref"]]
    if target["nullable"]:
        only = target["fields"]
        if len(only) != 1 or only[0]["kind"] != "string" or only[0]["card"] != "Rep":
            sys.exit(f"{f['ref']} is nullable but not a string list")
        return "StrList"
    return f"Msg({index[f['ref']]})"


def emit(messages, order, resources, go_zero):
    index = {name: i for i, name in enumerate(order)}
    out = ["// @generated by core/tools/gen_protobuf_schema.py from "
           f"{K8S_PB} (tags, kinds) and {K8S_OPENAPI}/{OPENAPI_VERSION} (JSON names).",
           "// Do not edit by hand: re-run the generator.",
           "",
           "use super::{Card, Card::*, Field, Message, Root, Ty, Ty::*};",
           "",
           "/// Shorthand that keeps one field per line.",
           "const fn f(tag: u32, json: &'static str, ty: Ty, card: Card, omit_zero: bool) -> Field {",
           "    Field { tag, json, ty, card, omit_zero }",
           "}",
           "",
           f"pub(super) static MESSAGES: [Message; {len(order)}] = ["]
    used_zero = set()
    for name in order:
        fields = sorted(messages[name]["fields"], key=lambda f: f["tag"])
        out.append(f"    // {index[name]}")
        out.append(f'    Message {{ name: "{name}", fields: &[')
        for f in fields:
            key = f"{name}.{f['json']}"
            omit = key in go_zero
            if omit:
                used_zero.add(key)
            out.append(f'        f({f["tag"]}, "{f["json"]}", {ty_of(f, messages, index)}, '
                       f'{f["card"]}, {"true" if omit else "false"}),')
        out.append("    ] },")
    out.append("];")
    roots = []
    for module, kinds in ROOTS.items():
        for kind in kinds:
            for k in (kind, kind + "List"):
                name = f"{module}.{k}"
                if name not in messages:
                    continue
                # Subresource kinds (Scale, Eviction, TokenRequest) have no
                # Resource impl; their module's other kinds name the version.
                api_version = "" if kind in ANY_GROUP_VERSION else API_VERSION.get(
                    kind) or resources.get(
                    f"{module}.{kind}") or next(v for n, v in sorted(resources.items())
                                                if n.rsplit(".", 1)[0] == module)
                roots.append((api_version, k, index[name]))
    roots.sort()
    out.append("")
    out.append(f"pub(super) static ROOTS: [Root; {len(roots)}] = [")
    for api_version, kind, i in roots:
        out.append(f'    Root {{ api_version: "{api_version}", kind: "{kind}", msg: {i} }},')
    out.append("];")
    stale = sorted(go_zero - used_zero)
    return "\n".join(out) + "\n", stale


def load_schema(k8s_pb=None, k8s_openapi=None):
    """Parses both crates; returns (messages, reachable order, resources,
    report). Shared with protobuf_oracle.py."""
    messages, resources = parse_k8s_pb(registry_dir(K8S_PB, k8s_pb))
    oa_index = openapi_index(registry_dir(K8S_OPENAPI, k8s_openapi))
    roots = []
    for module, kinds in ROOTS.items():
        for kind in kinds:
            roots += [n for n in (f"{module}.{kind}", f"{module}.{kind}List") if n in messages]
    order = reachable(messages, roots)
    report = {"renamed": [], "inline": [], "unmatched": [], "no_openapi": []}
    assign_json_names(messages, order, oa_index, report)
    return messages, order, resources, report


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k8s-pb", help="path to the k8s-pb crate source")
    ap.add_argument("--k8s-openapi", help="path to the k8s-openapi crate source")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--report", action="store_true", help="print name fixes and inline fields")
    args = ap.parse_args()
    messages, order, resources, report = load_schema(args.k8s_pb, args.k8s_openapi)
    text, stale = emit(messages, order, resources, load_go_zero())
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"wrote {args.out}: {len(order)} messages", file=sys.stderr)
    if stale:
        print(f"warning: {len(stale)} go-zero entries match no field: {stale[:5]}", file=sys.stderr)
    if args.report:
        for section, items in report.items():
            print(f"== {section} ({len(items)})")
            for item in items:
                print("  " + item)


if __name__ == "__main__":
    main()
