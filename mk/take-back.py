#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""take-back.py FILE POST PRE: take a patch back from an edited file.

POST and PRE are a file after and before one patch of the series; FILE
is POST with edits made to it since.  Writes to FILE the file before the
patch with those edits kept: the patch's changes are taken back, the
edits stay, line by line.  An edit to a line the patch adds or changes
goes with it (the patch owns that line), as does a line inserted where
the patch changed or removed lines; an edit to a line the patch leaves
alone stays, even right next to the patch's change (git merge-file
would call the two a conflict).  An edit of lines of both kinds at
once fails: where each part belongs cannot be told.  Used by
mk/apply.sh.
"""
import re
import subprocess
import sys

HUNK = re.compile(rb'^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@')


def changes(old_path, new_path, old, new, split=False, back=False):
    """The changes from old to new, as git diff (and so git blame) sees
    them: (start, end, lines), new[start:end] taking the place of lines
    when back, old[start:end] becoming lines in new otherwise."""
    run = subprocess.run(['git', 'diff', '--no-index', '--no-color', '-U0',
                          '--inter-hunk-context=0', '--no-ext-diff',
                          '--no-textconv', '--diff-algorithm=myers',
                          old_path, new_path],
                         stdout=subprocess.PIPE, check=False)
    if run.returncode not in (0, 1):    # 1: the files differ
        sys.exit('take-back.py: git diff %s %s failed' % (old_path, new_path))
    out = run.stdout
    hunks = []
    for line in out.splitlines():
        m = HUNK.match(line)
        if not m:
            continue
        a, b, c, d = (int(x) if x is not None else 1 for x in m.groups())
        # A count of 0: the hunk goes after that line.
        a = a if b == 0 else a - 1
        c = c if d == 0 else c - 1
        if back:
            a, b, c, d, src = c, d, a, b, old
        else:
            src = new
        if split and (b == d or d == 0):
            # Line for line (a change of as many lines, or a removal):
            # each line is its own change, so that edits to neighbouring
            # lines of two patches part.
            hunks += [(a + k, a + k + 1, src[c + k:c + k + 1] if d else [])
                      for k in range(b)]
        else:
            hunks.append((a, a + b, src[c:c + d]))
    return hunks


def meet(a, b):
    """Do two changes of base touch the same lines?  Two insertions at
    one place meet; an insertion meets a change of lines around it."""
    if a[0] == a[1] and b[0] == b[1]:
        return a[0] == b[0]
    if a[0] == a[1]:
        return b[0] < a[0] < b[1]
    if b[0] == b[1]:
        return a[0] < b[0] < a[1]
    return a[0] < b[1] and b[0] < a[1]


def within(a, b):
    """Does change a of base lie inside the lines change b changes (an
    insertion: at b's place, or between its lines)?"""
    return b[0] <= a[0] and a[1] <= b[1]


def main():
    path, post_path, pre_path = sys.argv[1:4]

    def read(p):
        # Lines as git sees them: ended by \n only.
        with open(p, 'rb') as f:
            return f.readlines()

    edited, post, pre = read(path), read(post_path), read(pre_path)
    # The patch as git diff gave it (pre to post), taken back.
    patch = changes(pre_path, post_path, pre, post, back=True)
    edits = []
    for e in changes(post_path, path, post, edited, split=True):
        met = [p for p in patch if meet(e, p)]
        if not met:
            edits.append(e)
        elif not all(within(e, p) for p in met) or len(met) > 1:
            # Lines of the patch and lines before it in one edit: which
            # part goes where cannot be told.
            sys.exit('take-back.py: the edit of lines %d-%d (of the file as '
                     'the patch leaves it) reaches beyond the lines the patch '
                     'changes: make it in two edits, with a make apply between, '
                     'or in the applied tree' % (e[0] + 1, max(e[1], e[0] + 1)))
    # Insertions first at equal starts: an insertion before a change of
    # the line it stands in front of.
    out, at = [], 0
    for start, end, lines in sorted(patch + edits,
                                    key=lambda c: (c[0], c[1] > c[0])):
        out += post[at:start] + lines
        at = end
    out += post[at:]
    with open(path, 'wb') as f:
        f.write(b''.join(out))


if __name__ == '__main__':
    main()
