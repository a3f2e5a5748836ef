#!/usr/bin/env python3
"""Fails when the files of a source folder depend on each other in a circle.

Usage: scripts/check-layers.py DIR [DIR...]   (e.g. consumer/src provider/src)

A file and its header are one room: NAME.c and NAME.h are the node NAME. A
room depends on another when it #includes one of that room's headers
("NAME.h", quoted, in the same folder) or calls, from a .c file or a
header's inline function, a function defined (not static) in that room's
.c file. Each folder is checked on its own; the
first circle found in each is printed as a path, and the exit status is 1.
A function reached through a pointer (a subscriber, a registered hook) is
not a call by name and makes no edge: that is how a lower room hands work
upward without knowing who does it.
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


def rooms(folder):
    """{room: {'text': source text, 'includes': set of rooms}} for the folder."""
    out = {}
    for name in sorted(os.listdir(folder)):
        stem, ext = os.path.splitext(name)
        if ext not in ('.c', '.h'):
            continue
        with open(os.path.join(folder, name), encoding='utf-8', errors='replace') as f:
            raw = f.read()
        room = out.setdefault(stem, {'c': '', 'h': '', 'includes': set()})
        room[ext[1:]] = strip_comments(raw)
        for inc in INCLUDE.findall(raw):
            if '/' not in inc and os.path.exists(os.path.join(folder, inc)):
                room['includes'].add(os.path.splitext(inc)[0])
    return out


def graph(folder):
    rs = rooms(folder)
    defined = {}
    for stem, r in rs.items():
        for m in DEFINITION.finditer(r['c']):
            defined.setdefault(m.group(1), stem)
    edges = {stem: set() for stem in rs}
    for stem, r in rs.items():
        edges[stem] |= r['includes']
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


def main(argv):
    if len(argv) < 2:
        print('usage: check-layers.py DIR [DIR...]', file=sys.stderr)
        return 2
    status = 0
    for folder in argv[1:]:
        if not os.path.isdir(folder):
            print(f'check-layers: {folder}: not a folder', file=sys.stderr)
            return 2
        edges = graph(folder)
        circle = find_circle(edges)
        if circle:
            print(f'check-layers: {folder}: circle: ' + ' -> '.join(circle))
            status = 1
        else:
            print(f'check-layers: {folder}: {len(edges)} rooms, no circle')
    return status


if __name__ == '__main__':
    sys.exit(main(sys.argv))
