#!/usr/bin/env python3
"""Lists the focused e2e specs and splits them into chunks.

    specs.py E2E_TEST FOCUS CHUNKS OUT_DIR

Runs `e2e.test --ginkgo.dry-run` with FOCUS, reads its JSON report, and
writes OUT_DIR/specs.txt (every spec's full text, sorted), and for each
chunk K (1-based) OUT_DIR/chunk-K.specs (its specs), OUT_DIR/chunk-K.focus
(a Go regexp matching exactly those specs) and OUT_DIR/chunk-K.d/I.focus (one
matching only its I-th spec). Specs are dealt round-robin so
that slow groups (the webhook specs each wait minutes for a Deployment that
never becomes ready without a kubelet) are spread over the chunks. [Serial]
specs go to chunks of their own, at the end, which the driver never runs
alongside another chunk. Prints "CHUNK_COUNT SERIAL_FROM": the number of
chunks and the first serial chunk's number (CHUNK_COUNT+1 if none).
"""
import json
import os
import subprocess
import sys
import tempfile

GO_META = set('\\.+*?()|[]{}^$')


def go_quote(s):
    return ''.join('\\' + c if c in GO_META else c for c in s)


def list_specs(e2e, focus):
    with tempfile.TemporaryDirectory() as tmp:
        rep = os.path.join(tmp, 'dry.json')
        cmd = [e2e, '--ginkgo.dry-run', '--ginkgo.no-color', '--ginkgo.focus=' + focus,
               '--ginkgo.json-report=' + rep, '--provider=skeleton', '--kubeconfig=/dev/null']
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0 or not os.path.exists(rep):
            sys.exit('dry run failed (%d):\n%s' % (r.returncode, r.stdout[-2000:]))
        with open(rep) as f:
            report = json.load(f)
    specs = set()
    for suite in report:
        for s in suite.get('SpecReports') or []:
            if s.get('LeafNodeType') != 'It' or s.get('State') != 'passed':
                continue  # a dry run "passes" exactly the focused specs
            specs.add(' '.join((s.get('ContainerHierarchyTexts') or []) + [s['LeafNodeText']]))
    return sorted(specs)


def main():
    e2e, focus, chunks, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    specs = list_specs(e2e, focus)
    if not specs:
        sys.exit('no spec matches the focus %r' % focus)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, 'specs.txt'), 'w') as f:
        f.writelines(s + '\n' for s in specs)
    serial = [s for s in specs if '[Serial]' in s]
    normal = [s for s in specs if '[Serial]' not in s]
    chunks = max(1, min(chunks, len(specs)))
    # Serial specs get chunks in proportion to their share, at least one.
    n_serial = 0 if not serial else max(1, round(chunks * len(serial) / len(specs)))
    n_normal = 0 if not normal else max(1, chunks - n_serial)
    groups = [normal[i::n_normal] for i in range(n_normal)] + [serial[i::n_serial] for i in range(n_serial)]
    groups = [g for g in groups if g]
    for k, g in enumerate(groups, 1):
        with open(os.path.join(out, 'chunk-%d.specs' % k), 'w') as f:
            f.writelines(s + '\n' for s in g)
        # The suite's description precedes the spec text: anchor on a space.
        regex = '(?:^|\\s)(?:' + '|'.join(go_quote(s) for s in g) + ')$'
        with open(os.path.join(out, 'chunk-%d.focus' % k), 'w') as f:
            f.write(regex)
        # One regex per spec, for running a chunk's specs one at a time
        # when the chunk's e2e.test crashes.
        os.makedirs(os.path.join(out, 'chunk-%d.d' % k), exist_ok=True)
        for i, spec in enumerate(g, 1):
            with open(os.path.join(out, 'chunk-%d.d' % k, '%d.focus' % i), 'w') as f:
                f.write('(?:^|\\s)' + go_quote(spec) + '$')
    print(len(groups), len([g for g in groups if g and g[0] not in serial]) + 1)


if __name__ == '__main__':
    main()
