"""The soak, short (bench/soak.py; `make soak` runs it long): a few thousand
requests of the mixed load from three clients over three real models
while the models are replaced, unloaded and loaded every second. Nothing
goes unanswered, and mem_stats' request counts add up and equal what the
clients saw. Memory is the long run's figure, not checked here."""
import json
import os
import subprocess
import sys

from ospreyd_client import BIN, ROOT, SANITIZED, model

REQUESTS = 800 if SANITIZED else 4000


def test_short_soak_with_model_churn_answers_all_and_adds_up(tmp_path):
    for name in ("ultraface", "ultraface-int8", "blazeface", "face-liveness", "face-embed"):
        model(name)
    out = tmp_path / "soak.json"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "soak.py"), "--ospreyd", str(BIN / "ospreyd"),
                        "--requests", str(REQUESTS), "--churn-s", "1", "--report-s", "5",
                        "--json-out", str(out)],
                       capture_output=True, text=True, timeout=900, env=dict(os.environ))
    assert out.exists(), (r.returncode, r.stdout[-3000:], r.stderr[-3000:])
    rec = json.loads(out.read_text())
    assert rec["clientsFailed"] == [], rec["clientsFailed"]
    assert rec["unanswered"] == 0
    assert rec["serverExit"] == 0, open(rec["log"]).read()[-3000:]
    assert rec["addsUp"] and rec["agrees"], (rec["seen"], rec["requestsStats"])
    assert r.returncode == 0, r.stdout[-3000:]
    assert rec["churn"]["ops"] >= 2 and rec["churn"]["failed"] == 0, rec["churn"]
    req = rec["requestsStats"]
    assert req["received"] + rec["seen"]["command"] == REQUESTS
    # the mix reached every branch it aims at
    assert req["served"] > 0 and req["errors"]["notLoaded"] > 0 and req["errors"]["badRequest"] > 0
    assert sum(req["shed"].values()) > 0
    assert set(req["models"]) == {"0", "1", "2", "3"}
