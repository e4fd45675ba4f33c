#!/usr/bin/env python3
"""Whether the server's folders include only what their layer may see
(docs/architecture.md, The server's map). Under ROOT (default src/server):

  core/                 no header of pipe/ or of a front end
  pipe/                 no header of a front end
  http/ frigate/ fleet/ cameras/ (the front ends) only core/'s headers, their own
                        folder's, and server/server.h (the options)

Prints each include that breaks a rule and exits 1 if there is any.
Usage: tools/layers.py [ROOT]"""
import re
import sys
from pathlib import Path

FRONT_ENDS = ("http", "frigate", "fleet", "cameras")
INCLUDE = re.compile(r'^\s*#\s*include\s+"server/([^"]+)"', re.M)


def allowed(folder, target):
    """Whether a file of `folder` may include server/`target`."""
    top = target.split("/")[0] if "/" in target else ""
    if folder == "core":
        return top in ("", "core")
    if folder == "pipe":
        return top in ("", "core", "pipe")
    if folder in FRONT_ENDS:
        return top in ("core", folder) or target == "server.h"
    return True  # the top (server.c) puts the parts together


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "src/server")
    bad = []
    for f in sorted(root.rglob("*.[ch]")):
        rel = f.relative_to(root)
        folder = rel.parts[0] if len(rel.parts) > 1 else ""
        for m in INCLUDE.finditer(f.read_text()):
            if not allowed(folder, m.group(1)):
                bad.append(f"{f}: includes server/{m.group(1)}")
    for line in bad:
        print(line)
    if bad:
        print(f"{len(bad)} include(s) across the server's layers", file=sys.stderr)
        return 1
    print(f"every include of {root} keeps to its layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
