"""tools/layers.py and tools/callgraph.py on small trees made here: each
finds what it is for, and passes what keeps to the rules."""
import subprocess
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent


def run(tool, root):
    return subprocess.run([sys.executable, str(TOOLS / tool), str(root)], capture_output=True, text=True)


def write(root, rel, text):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_layers_refuses_a_front_end_reaching_into_the_pipe(tmp_path):
    write(tmp_path, "core/jobs.c", '#include "server/core/job.h"\n')
    write(tmp_path, "pipe/conn.c", '#include "server/core/loop.h"\n#include "server/pipe/conn.h"\n')
    write(tmp_path, "http/http.c", '#include "server/core/stats.h"\n#include "server/server.h"\n')
    assert run("layers.py", tmp_path).returncode == 0
    write(tmp_path, "fleet/fleet.c", '#include "server/pipe/conn.h"\n')
    r = run("layers.py", tmp_path)
    assert r.returncode == 1 and "fleet/fleet.c: includes server/pipe/conn.h" in r.stdout


def test_layers_refuses_the_core_knowing_the_pipe(tmp_path):
    write(tmp_path, "core/jobs.c", '#include "server/pipe/conn.h"\n')
    r = run("layers.py", tmp_path)
    assert r.returncode == 1 and "core/jobs.c" in r.stdout


def test_callgraph_finds_a_cycle_through_a_callback(tmp_path):
    write(tmp_path, "a.c", "void a_run(void) { b_run(); }\n")
    write(tmp_path, "b.c", "void b_run(void) { }\n")
    assert run("callgraph.py", tmp_path).returncode == 0
    write(tmp_path, "b.c", "static void (*cb)(void) = a_run;\nvoid b_run(void) { cb(); }\n")
    r = run("callgraph.py", tmp_path)
    assert r.returncode == 1 and "a.c" in r.stdout and "b.c" in r.stdout
