#!/usr/bin/env python3
"""Writes CONFORMANCE.md from the raw results of scripts/conformance.sh.

    report.py OUT_DIR [--md FILE] [--no-merge]

OUT_DIR is one run's output: meta.env, chunks/specs.txt, and for each target
that ran (kube, kubeshard-proto, kubeshard-json) a directory with
chunk-K/junit.xml, chunk-K/timing.tsv and commands.txt.

A target that did not run this time keeps the column, counts, wall times and
commands it had in FILE (they are carried in a data comment at its end), so
the baseline and kubeshard can be run at different times. --no-merge ignores
FILE's earlier content.

The "waits for" column comes from scripts/conformance/waits-for.tsv
(spec-substring<TAB>issue, first match wins); where no line matches, the
value the column had in FILE is kept, so a hand edit in the table survives.
"""
import argparse
import datetime
import glob
import gzip
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

TARGETS = [('kube', 'kube-apiserver'), ('kubeshard-proto', 'kubeshard (protobuf)'),
           ('kubeshard-json', 'kubeshard (JSON)')]
HERE = os.path.dirname(os.path.abspath(__file__))
DATA_RE = re.compile(r'<!-- conformance-data (.*?) -->', re.S)
FAILED = {'failed', 'panicked', 'timedout', 'interrupted', 'aborted'}
MARK = {'passed': 'pass', 'failed': '**FAIL**', 'skipped': 'skip', 'none': 'not run'}


def read_meta(out):
    meta = {}
    try:
        with open(os.path.join(out, 'meta.env')) as f:
            for line in f:
                k, _, v = line.rstrip('\n').partition('=')
                meta[k] = v
    except FileNotFoundError:
        pass
    return meta


def first_lines(text, n=3, width=400):
    lines = [l.strip() for l in (text or '').splitlines() if l.strip()]
    s = ' ⏎ '.join(lines[:n])
    return s if len(s) <= width else s[:width - 1] + '…'


def has_junit(d):
    return any(os.path.exists(os.path.join(d, n)) for n in ('junit.xml', 'junit.xml.gz'))


def read_lines(path):
    try:
        with open(path) as f:
            return [l.rstrip('\n') for l in f if l.strip()]
    except FileNotFoundError:
        return []


ANSI = re.compile(r'\x1b\[[0-9;]*m')


def crash_line(log):
    """The failing call of a spec that crashed e2e.test, from its log."""
    try:
        with open(log, errors='replace') as f:
            text = ANSI.sub('', f.read())
    except FileNotFoundError:
        return 'no log'
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.startswith('SSS')]
    # Ginkgo's explanation of a Fail() outside its goroutine follows the call.
    for i, l in enumerate(lines):
        if l.startswith("When you, or your assertion library, calls Ginkgo's Fail()") and i >= 2:
            return first_lines('\n'.join(lines[i - 2:i]), 2, 300)
    for l in lines:
        if l.startswith('panic:'):
            return first_lines(l, 1, 300)
    return first_lines('\n'.join(lines[-2:]), 2, 300) or 'no output'


def parse_junit(path, specs):
    """{spec: (state, failure)} from one ginkgo JUnit report, and suite-level failures."""
    out, suite_fail = {}, []
    try:
        if not os.path.exists(path) and os.path.exists(path + '.gz'):
            with gzip.open(path + '.gz') as f:
                root = ET.parse(f).getroot()
        else:
            root = ET.parse(path).getroot()
    except (ET.ParseError, FileNotFoundError, OSError) as e:
        return out, ['%s: %s' % (os.path.basename(os.path.dirname(path)), e)]
    for tc in root.iter('testcase'):
        name = tc.get('name', '')
        status = tc.get('status', '')
        fail = tc.find('failure')
        if fail is None:
            fail = tc.find('error')
        msg = ''
        if fail is not None:
            msg = fail.get('message') or fail.text or ''
        if not name.startswith('[It] '):
            if status in FAILED or fail is not None:
                suite_fail.append('%s: %s' % (name, first_lines(msg, 2)))
            continue
        text = name[len('[It] '):]
        if text not in specs:
            text = re.sub(r' \[[^\[\]]*\]$', '', text)  # the labels ginkgo appends
        if text not in specs:
            continue
        if status == 'passed':
            out[text] = ('passed', '')
        elif status in FAILED or fail is not None:
            out[text] = ('failed', (status + ': ' if status not in ('failed', '') else '') + first_lines(msg))
        else:  # skipped, pending
            sk = tc.find('skipped')
            out[text] = ('skipped', first_lines(sk.get('message', '') if sk is not None else ''))
    return out, suite_fail


def collect(out, target, specs, meta):
    d = os.path.join(out, target)
    if not os.path.isdir(d):
        return None
    results, notes, timings = {}, [], []
    for cd in sorted((p for p in glob.glob(os.path.join(d, 'chunk-*')) if os.path.isdir(p)), key=lambda p: int(p.rsplit('-', 1)[1])):
        # Each chunk's report lists every spec of the suite, those of the
        # other chunks as skipped: take only the chunk's own.
        mine = specs
        try:
            with open(os.path.join(out, 'chunks', os.path.basename(cd) + '.specs')) as f:
                mine = set(l.rstrip('\n') for l in f if l.strip())
        except FileNotFoundError:
            pass
        if has_junit(cd):
            r, sf = parse_junit(os.path.join(cd, 'junit.xml'), mine)
            results.update(r)
            notes += sf
        else:
            reruns = glob.glob(os.path.join(cd, 'spec-*'))
            if not reruns:
                notes.append('%s: e2e.test left no report (%s)' % (os.path.basename(cd), crash_line(os.path.join(cd, 'e2e.log'))))
            # The chunk crashed and its specs ran one at a time (conformance.sh).
            order = read_lines(os.path.join(out, 'chunks', os.path.basename(cd) + '.specs'))
            for sd in reruns:
                i = int(sd.rsplit('-', 1)[1])
                spec = order[i - 1] if i <= len(order) else None
                if spec is None:
                    continue
                if has_junit(sd):
                    r, _ = parse_junit(os.path.join(sd, 'junit.xml'), {spec})
                    results.update(r)
                else:
                    results[spec] = ('failed', 'crashed e2e.test: ' + crash_line(os.path.join(sd, 'e2e.log')))
        try:
            with open(os.path.join(cd, 'timing.tsv')) as f:
                k, n, secs, rc = f.read().split('\t')
                timings.append([int(k), int(n), int(secs), int(rc)])
        except (FileNotFoundError, ValueError):
            pass
    for s in specs:
        results.setdefault(s, ('none', ''))
    commands = ''
    try:
        with open(os.path.join(d, 'commands.txt')) as f:
            commands = f.read().strip()
        # Paths in the run's own directory and the home directory, shortened.
        commands = commands.replace(os.path.abspath(out) + '/', '$OUT/')
        commands = commands.replace(os.path.expanduser('~') + '/', '~/')
        commands = re.sub(r'\b(127\.0\.0\.1):\d+', r'\1:PORT', commands)
        commands = re.sub(r'(--secure-port) \d+', r'\1 PORT', commands)
    except FileNotFoundError:
        pass
    version = ''
    try:
        with open(os.path.join(d, 'version.txt')) as f:
            version = f.read().strip().splitlines()[0]
    except (FileNotFoundError, IndexError):
        try:  # /version, or `kubectl version -o json` (which may add a warning)
            with open(os.path.join(d, 'server-version.json')) as f:
                text = f.read()
            v = json.loads(text[text.index('{'):text.rindex('}') + 1])
            version = v.get('serverVersion', v)['gitVersion']
        except (FileNotFoundError, KeyError, ValueError):
            pass
    total = None
    try:
        with open(os.path.join(d, 'timings.tsv')) as f:
            for line in f:
                if line.startswith('total\t'):
                    total = int(line.split('\t')[2])
    except (FileNotFoundError, ValueError):
        pass
    return {'date': meta.get('date', ''), 'commit': meta.get('commit', ''), 'e2e': meta.get('e2e', ''),
            'parallel': meta.get('parallel', '1'), 'version': version, 'results': results,
            'timings': timings, 'total': total, 'notes': notes, 'commands': commands}


def load_previous(md):
    try:
        with open(md) as f:
            text = f.read()
    except FileNotFoundError:
        return {}, {}
    data = {}
    m = DATA_RE.search(text)
    if m:
        try:
            data = json.loads(m.group(1).replace('-\\-', '--'))
        except json.JSONDecodeError:
            data = {}
    waits = {}
    in_specs = False
    for line in text.splitlines():
        if line.startswith('## '):
            in_specs = line.strip() == '## Specs'
            continue
        if in_specs and line.startswith('| ') and not line.startswith('| spec ') and not line.startswith('| ---'):
            cells = [c.strip() for c in re.split(r'(?<!\\)\|', line.strip())[1:-1]]
            if len(cells) >= 2 and cells[-1]:
                waits[cells[0].replace('\\|', '|')] = cells[-1]
    return data, waits


KEPT_SECTIONS = ('## The real control plane',)


def kept_sections(md):
    """The lines of the sections other harnesses own, from an existing report."""
    try:
        text = open(md).read()
    except FileNotFoundError:
        return []
    out, keep = [], False
    for line in text.splitlines():
        if line.startswith('## '):
            keep = line.strip() in KEPT_SECTIONS
        elif line.startswith('<!-- conformance-data'):
            keep = False
        if keep:
            out.append(line)
    return out


def load_waits_for():
    rules = []
    try:
        with open(os.path.join(HERE, 'waits-for.tsv')) as f:
            for line in f:
                if not line.strip() or line.startswith('#'):
                    continue
                sub, _, issue = line.rstrip('\n').partition('\t')
                if sub and issue:
                    rules.append((sub.lower(), issue.strip()))
    except FileNotFoundError:
        pass
    return rules


def mmss(secs):
    return '%d:%02d' % (secs // 60, secs % 60)


def esc(s):
    return s.replace('|', '\\|').replace('\n', ' ')


def count(results):
    c = {'passed': 0, 'failed': 0, 'skipped': 0, 'none': 0}
    for st, _ in results.values():
        c[st] += 1
    return c


def render(specs, runs, waits_rules, waits_prev, meta, focus):
    L = []
    a = L.append
    a('# Conformance')
    a('')
    a('The upstream e2e conformance specs that match `%s` (%d specs), run by '
      '`scripts/conformance.sh` against kube-apiserver (the baseline: etcd, kube-apiserver, '
      'kube-controller-manager and kube-scheduler) and against kubeshard, with the default '
      'protobuf client and with JSON (`--kube-api-content-type=application/json`). '
      'Neither cluster has a kubelet: one fake node, Ready with zero pod capacity, stands in, '
      'so specs that need a running pod (admission webhooks, CRD conversion webhooks, the '
      'sample API server) fail on both. CI does not run this; regenerate it with '
      '`scripts/conformance.sh` (see its header for the options).' % (focus, len(specs)))
    a('')
    a('Edit the "waits for" column through `scripts/conformance/waits-for.tsv` '
      '(spec substring, tab, issue); a value typed into the table by hand is kept when '
      'no line of that file matches the spec.')
    a('')
    a('## How it runs')
    a('')
    a('- Each server runs on free loopback ports only. kubeshard: `--storage memory` with its '
      'generated certificates and admin kubeconfig. The baseline: a single-member etcd '
      '(`--unsafe-no-fsync`, as kubeshard keeps nothing on disk either), kube-apiserver with '
      'certificates made by openssl, kube-controller-manager and kube-scheduler (both '
      '`--leader-elect=false`). kube-apiserver has `--enable-aggregator-routing=true`, so a '
      'webhook or aggregated API resolves to its Service\'s endpoints (there are none) rather '
      'than a cluster IP in 10.0.0.0/24, which nothing here answers.')
    a('- One fake node, `ks-fake-node`, Ready, with zero pod capacity: '
      '`scripts/conformance/fakenode.py` creates it and renews its Lease and Ready heartbeat '
      'every 10 s. Nothing is scheduled onto it and no kubelet exists, so no pod ever runs.')
    a('- `e2e.test` runs once per chunk with `--provider=skeleton --allowed-not-ready-nodes=-1 '
      '--num-nodes=1 --minStartupPods=-1 --e2e-verify-service-account=false`. The specs are '
      'dealt round-robin into chunks; the non-[Serial] chunks run at once against one server '
      '(upstream runs those specs in parallel too), then the [Serial] chunk alone. A spec that '
      'needs a running pod (the admission and CRD-conversion webhooks, the sample API server) '
      'waits 5 minutes for its Deployment (10 for a running pod) and fails on every server here; '
      'those waits set the chunks\' wall time.')
    a('- Raw results (JUnit per chunk, every server\'s log) stay in the run\'s output directory, '
      '`target/conformance/<time>/` by default; `scripts/conformance/progress.py DIR` shows a '
      'run\'s progress.')
    a('')
    a('## Runs')
    a('')
    a('| server | passed | failed | skipped | not run | date (UTC) | repo commit | e2e | total wall time |')
    a('| --- | ---: | ---: | ---: | ---: | --- | --- | --- | ---: |')
    for key, label in TARGETS:
        r = runs.get(key)
        if not r:
            a('| %s | | | | | not run yet | | | |' % label)
            continue
        c = count(r['results'])
        tot = mmss(r['total']) if r.get('total') else ''
        if r.get('parallel', '1') not in ('1', ''):
            tot += ' (%s chunks at once)' % r['parallel']
        a('| %s | %d | %d | %d | %d | %s | %s | %s | %s |' % (
            label, c['passed'], c['failed'], c['skipped'], c['none'], r['date'], r['commit'],
            r['e2e'], tot))
    a('')
    a('"not run": no result for the spec (its chunk crashed or the server did not start).')
    a('')
    a('## Wall time per chunk')
    a('')
    nch = max([len(r['timings']) for r in runs.values() if r] + [0])
    if nch:
        a('| chunk | specs | ' + ' | '.join(l for k, l in TARGETS if runs.get(k)) + ' |')
        a('| ---: | ---: | ' + ' | '.join('---:' for k, _ in TARGETS if runs.get(k)) + ' |')
        rows = {}
        for key, _ in TARGETS:
            r = runs.get(key)
            if not r:
                continue
            for k, n, secs, rc in r['timings']:
                rows.setdefault(k, {'n': n})[key] = mmss(secs) + ('' if rc == 0 else ' (exit %d)' % rc)
        for k in sorted(rows):
            a('| %d | %d | ' % (k, rows[k]['n']) + ' | '.join(rows[k].get(key, '') for key, _ in TARGETS if runs.get(key)) + ' |')
        a('')
        a('Minutes:seconds of each `e2e.test` run; exit 1 only means some spec failed. '
          'With more than one chunk at once the chunks share the server and the 2 cores.')
    else:
        a('No chunk has run yet.')
    a('')
    notes = [(l, n) for k, l in TARGETS if runs.get(k) for n in runs[k]['notes']]
    if notes:
        a('Suite-level failures:')
        a('')
        for l, n in notes:
            a('- %s: %s' % (l, n))
        a('')
    a('## Commands')
    a('')
    for key, label in TARGETS:
        r = runs.get(key)
        if r and r['commands']:
            a('%s%s, with `$OUT` the run\'s output directory and each PORT a free loopback port:' % (
                label, (' (' + r['version'] + ')') if r.get('version') else ''))
            a('')
            a('```')
            a(r['commands'])
            a('```')
            a('')
    a('## Specs')
    a('')
    a('| spec | kube-apiserver | kubeshard (protobuf) | kubeshard (JSON) | first lines of the failure | waits for |')
    a('| --- | --- | --- | --- | --- | --- |')
    for s in specs:
        cells = []
        for key, _ in TARGETS:
            r = runs.get(key)
            cells.append(MARK[r['results'][s][0]] if r and s in r['results'] else '')
        fail = ''
        for key, label in (('kubeshard-proto', ''), ('kubeshard-json', 'JSON: '), ('kube', 'kube-apiserver: ')):
            r = runs.get(key)
            if r and s in r['results'] and r['results'][s][0] == 'failed':
                fail = label + r['results'][s][1]
                break
        ks = [runs[k]['results'].get(s, ('none', ''))[0] for k in ('kubeshard-proto', 'kubeshard-json') if runs.get(k)]
        waits = ''
        if not ks or any(st != 'passed' for st in ks):
            low = s.lower()
            waits = next((issue for sub, issue in waits_rules if sub in low), '') or waits_prev.get(s, '')
        a('| %s | %s | %s | %s | %s | %s |' % (esc(s), cells[0], cells[1], cells[2], esc(fail), esc(waits)))
    a('')
    return L


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('out')
    ap.add_argument('--md', default=os.path.join(HERE, '..', '..', 'CONFORMANCE.md'))
    ap.add_argument('--no-merge', action='store_true')
    args = ap.parse_args()
    meta = read_meta(args.out)
    try:
        with open(os.path.join(args.out, 'chunks', 'specs.txt')) as f:
            specs = [l.rstrip('\n') for l in f if l.strip()]
    except FileNotFoundError:
        sys.exit('%s has no chunks/specs.txt: not a conformance.sh output directory' % args.out)
    prev, waits_prev = ({}, {}) if args.no_merge else load_previous(args.md)
    runs = {}
    for key, _ in TARGETS:
        r = collect(args.out, key, set(specs), meta)
        if r is None and key in prev.get('runs', {}):
            r = prev['runs'][key]
            r['results'] = {k: tuple(v) for k, v in r['results'].items()}
            for s in specs:
                r['results'].setdefault(s, ('none', ''))
        if r is not None:
            runs[key] = r
    lines = render(specs, runs, load_waits_for(), waits_prev, meta, meta.get('focus', ''))
    # Sections written by other harnesses (scripts/controlplane.sh) are
    # kept as they are, before the spec table.
    kept = kept_sections(args.md)
    if kept:
        at = lines.index('## Specs')
        lines[at:at] = kept
    blob = json.dumps({'runs': runs}, ensure_ascii=False, separators=(',', ':')).replace('--', '-\\-')
    lines.append('<!-- conformance-data %s -->' % blob)
    with open(args.md, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    for key, label in TARGETS:
        if runs.get(key):
            c = count(runs[key]['results'])
            print('%s: %d passed, %d failed, %d skipped, %d not run' % (label, c['passed'], c['failed'], c['skipped'], c['none']))


if __name__ == '__main__':
    main()
