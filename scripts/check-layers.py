#!/usr/bin/env python3
"""Fails when source files depend on each other in a circle, or a folder
depends on one it may not call.

Usage: scripts/check-layers.py MAP ROOT [ROOT...]
  (e.g. docs/architecture.md consumer/src provider)

A file and its header are one room: DIR/NAME.c and DIR/NAME.h are the node
DIR/NAME (NAME.bpf.c and NAME.bpf.h are DIR/NAME.bpf). A room depends on
another when it #includes one of that room's headers (quoted: beside the
including file, or from the ROOT it lies under) or calls, from a .c file or a
header's inline function, a function defined (not static) in that room's .c
file. A BPF program (NAME.bpf.c) is its own object, so its rooms depend on
others by include only, and userspace never calls into one. A function reached through a pointer (a
subscriber, a registered hook) is not a call by name and makes no edge: that
is how a lower room hands work upward without knowing who does it.

Two rules, each ROOT checked on its own:
- no circle between rooms, across its folders; the first one found is
  printed as a path;
- the folder map: MAP (docs/architecture.md) holds a table whose first column
  is a folder (`consumer/src/cli/`) and whose last says what it may call
  (`session/`, `profile/`, ... or "nothing"), top to bottom from the commands
  down. Every folder holding sources is a row; a room may depend on a room of
  another folder only when that folder is in its row's "may call" and stands
  below it in the table. Each breach is printed with the files behind it.
The exit status is 1 when either rule is broken.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# a definition at the start of a line: type words, then name(, and a body
# after the closing parenthesis (not a ';': that is a declaration)
DEFINITION = re.compile(
    r'^(?!static\b)(?:[A-Za-z_][\w\s\*]*?[\s\*])([A-Za-z_]\w*)\s*\(([^;{}]*?)\)\s*'
    r'(?:__attribute__\s*\(\(.*?\)\)\s*)*\{', re.M | re.S)
CALL = re.compile(r'\b([A-Za-z_]\w*)\s*\(')
# a row of the folder map: | `path/` | what it holds | what it may call |
MAP_ROW = re.compile(r'^\|\s*`([^`]+/)`\s*\|.*\|([^|]*)\|\s*$')
MAP_TOKEN = re.compile(r'`([^`]+/)`')


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    # string and character literals: their words are not calls
    return re.sub(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', '""', text)


def bodies(text):
    """What stands between braces: in a header, the bodies of its inline
    functions (a prototype outside braces is no call)."""
    out, depth = [], 0
    for ch in text:
        if ch == '{':
            depth += 1
        elif ch == '}':
            depth -= 1
        elif depth > 0:
            out.append(ch)
    return ''.join(out)


def room_of(path):
    """consumer/src/x/NAME.c -> (consumer/src/x/NAME, 'c')."""
    stem, ext = os.path.splitext(path)
    return stem, ext[1:]


def rooms(root):
    """{room: {'c', 'h': source text, 'includes': set of rooms, 'bpf': bool}}
    for every .c and .h file under root; rooms are paths as given."""
    out = {}
    for folder, _, names in sorted(os.walk(root)):
        for name in sorted(names):
            path = os.path.join(folder, name)
            stem, ext = room_of(path)
            if ext not in ('c', 'h'):
                continue
            with open(path, encoding='utf-8', errors='replace') as f:
                raw = f.read()
            room = out.setdefault(stem, {'c': '', 'h': '', 'includes': set(),
                                         'bpf': stem.endswith('.bpf')})
            room[ext] = strip_comments(raw)
            for inc in INCLUDE.findall(raw):
                for base in (folder, root):
                    target = os.path.normpath(os.path.join(base, inc))
                    if os.path.exists(target):
                        room['includes'].add(room_of(target)[0])
                        break
    return out


def graph(root):
    rs = rooms(root)
    defined = {}
    for stem, r in rs.items():
        if not r['bpf']:
            for m in DEFINITION.finditer(r['c']):
                defined.setdefault(m.group(1), stem)
    edges = {stem: set() for stem in rs}
    for stem, r in rs.items():
        edges[stem] |= r['includes'] & rs.keys()
        if r['bpf']:
            continue
        for name in CALL.findall(r['c'] + bodies(r['h'])):
            owner = defined.get(name)
            if owner:
                edges[stem].add(owner)
        edges[stem].discard(stem)
    return edges


def find_circle(edges):
    """A list of rooms forming a circle, or None (depth-first search)."""
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def folder_map(path):
    """[(folder, [may-call tokens])] in the table's order, top first."""
    rows = []
    with open(path, encoding='utf-8') as f:
        for line in f:
            m = MAP_ROW.match(line.strip())
            if m:
                rows.append((m.group(1), MAP_TOKEN.findall(m.group(2))))
    return rows


def resolve(token, folders):
    """The folder a may-call token names: itself, or the one folder whose
    path ends with /token."""
    hits = [f for f in folders if f == token or f.endswith('/' + token)]
    return hits[0] if len(hits) == 1 else None


def check_folders(edges, rows, root):
    """Breaches of the folder rule, as lines to print."""
    order = [folder for folder, _ in rows]
    rank = {folder: i for i, folder in enumerate(order)}
    problems = []
    allowed = {}
    for folder, tokens in rows:
        allowed[folder] = set()
        for t in tokens:
            target = resolve(t, order)
            if target is None:
                problems.append(f'{folder}: may call `{t}`, which names no one folder of the map')
            elif rank[target] <= rank[folder]:
                problems.append(f'{folder}: may call {target}, which does not stand below it')
            else:
                allowed[folder].add(target)
    seen = set()
    breaches = {}
    for room, targets in edges.items():
        src = os.path.dirname(room) + '/'
        if src not in rank:
            if src not in seen:
                problems.append(f'{src}: holds sources but is not a row of the folder map')
                seen.add(src)
            continue
        for t in targets:
            dst = os.path.dirname(t) + '/'
            if dst != src and dst in rank and dst not in allowed[src]:
                breaches.setdefault((src, dst), []).append(
                    f'{os.path.relpath(room, root)} -> {os.path.relpath(t, root)}')
    for (src, dst), why in sorted(breaches.items()):
        problems.append(f'{src} depends on {dst}, not in its "may call": ' + ', '.join(sorted(why)[:4]))
    return problems


def main(argv):
    if len(argv) < 3:
        print('usage: check-layers.py MAP ROOT [ROOT...]', file=sys.stderr)
        return 2
    if not os.path.isfile(argv[1]):
        print(f'check-layers: {argv[1]}: no such file (the folder map)', file=sys.stderr)
        return 2
    rows = folder_map(argv[1])
    if not rows:
        print(f'check-layers: {argv[1]}: no folder map (rows of `folder/` | holds | may call)', file=sys.stderr)
        return 2
    status = 0
    for root in argv[2:]:
        if not os.path.isdir(root):
            print(f'check-layers: {root}: not a folder', file=sys.stderr)
            return 2
        edges = graph(root)
        circle = find_circle(edges)
        if circle:
            print(f'check-layers: {root}: circle: ' + ' -> '.join(circle))
            status = 1
        mine = [(f, t) for f, t in rows if f.startswith(root.rstrip('/') + '/')]
        problems = check_folders(edges, mine, root)
        for p in problems:
            print(f'check-layers: {p}')
        if problems:
            status = 1
        if not circle and not problems:
            folders = {os.path.dirname(r) for r in edges}
            print(f'check-layers: {root}: {len(edges)} rooms in {len(folders)} folders, '
                  'no circle, every folder calls only down the map')
    return status


if __name__ == '__main__':
    sys.exit(main(sys.argv))
