#!/usr/bin/env python3
"""Progress of a running (or finished) scripts/conformance.sh output dir.

    progress.py OUT_DIR

Per target and chunk: specs done (from e2e.log's progress marks), how many
of them failed, and the chunk's wall time once it has ended.
"""
import glob
import os
import re
import sys

out = sys.argv[1]
for tdir in sorted(glob.glob(os.path.join(out, '*', ''))):
    chunks = sorted((p for p in glob.glob(os.path.join(tdir, 'chunk-*')) if os.path.isdir(p) and re.fullmatch(r'chunk-\d+', os.path.basename(p))), key=lambda p: int(p.rsplit('-', 1)[1]))
    if not chunks:
        continue
    print(os.path.basename(tdir.rstrip('/')))
    for cd in chunks:
        k = os.path.basename(cd)
        try:
            n = sum(1 for _ in open(os.path.join(out, 'chunks', k + '.specs')))
        except FileNotFoundError:
            n = '?'
        try:
            log = open(os.path.join(cd, 'e2e.log'), errors='replace').read()
        except FileNotFoundError:
            log = ''
        done = log.count('\u2022')
        failed = len(re.findall(r'\u2022 \[(?:FAILED|PANICKED|TIMEDOUT|INTERRUPTED)\]', log))
        timing = ''
        if os.path.exists(os.path.join(cd, 'timing.tsv')):
            f = open(os.path.join(cd, 'timing.tsv')).read().split('\t')
            timing = 'ended after %s s, exit %s' % (f[2], f[3].strip())
        print('  %s: %s/%s done, %d failed %s' % (k, done, n, failed, timing))
