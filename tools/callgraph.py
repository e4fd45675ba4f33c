#!/usr/bin/env python3
"""Which .c files of a folder reach which: file A reaches file B when A calls
or names (as a callback) a function B defines. Prints the strongly connected
components of more than one file (the cycles) and the edges inside them, and
exits 1 when there is any. Usage: tools/callgraph.py [FOLDER] (default
src/server). Reads the text: comments and strings are dropped first; macros
are not expanded."""
import re
import sys
from pathlib import Path

DEF = re.compile(r"^[A-Za-z_][\w \t\*]*?\b([a-z_]\w*)\s*\([^;{]*\)\s*\{", re.M)
IDENT = re.compile(r"\b([a-z_]\w*)\b")


def strip(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def main():
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "src/server")
    files = sorted(folder.rglob("*.c"))
    text = {f: strip(f.read_text()) for f in files}
    owner = {}
    for f, t in text.items():
        for m in DEF.finditer(t):
            if not re.search(r"\bstatic\b", t[t.rfind("\n", 0, m.start()) + 1:m.start(1)]):
                owner.setdefault(m.group(1), f)
    edges = {f: set() for f in files}
    for f, t in text.items():
        for name in set(IDENT.findall(t)):
            g = owner.get(name)
            if g and g != f:
                edges[f].add(g)
    index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(comp)

    sys.setrecursionlimit(10000)
    for f in files:
        if f not in index:
            visit(f)
    cycles = [sorted(c) for c in sccs if len(c) > 1]
    for c in cycles:
        names = [p.relative_to(folder).as_posix() for p in c]
        inner = sum(len(edges[a] & set(c)) for a in c)
        print(f"cycle of {len(c)} files, {inner} edges: {' '.join(names)}")
        for a in c:
            for b in sorted(edges[a] & set(c)):
                print(f"  {a.relative_to(folder)} -> {b.relative_to(folder)}")
    if not cycles:
        print(f"no cycle among the {len(files)} .c files of {folder}")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
