#!/usr/bin/env python3
"""The end-to-end suite in two passes, as make check runs it.

    tools/pytest2.py JOBS PYTEST-ARGS...

1. every test not marked `serial`, JOBS at a time (pytest-xdist's -n);
2. the tests marked `serial` (tests/e2e/conftest.py), one at a time, with
   nothing beside them: a peer that keeps its own deadline (Frigate's
   client gives up after 200 ms) would otherwise be measuring whatever runs
   next to it.

Both passes always run; the exit status is the first failing pass's
(pytest's 5, "no test collected", is not a failure here: a -k may leave
one pass empty). With JOBS 1 it is one plain pytest run.
"""
import subprocess
import sys


def main():
    if len(sys.argv) < 2 or not sys.argv[1].isdigit():
        sys.exit(__doc__)
    jobs, args = int(sys.argv[1]), sys.argv[2:]
    pytest = [sys.executable, "-m", "pytest"]
    if jobs <= 1:
        sys.exit(subprocess.call(pytest + args))
    status = 0
    for extra in (["-n", str(jobs), "-m", "not serial"], ["-m", "serial"]):
        rc = subprocess.call(pytest + extra + args)
        if rc not in (0, 5) and not status:
            status = rc
    sys.exit(status)


if __name__ == "__main__":
    main()
