"""The doors' soak, short (bench/soak_doors.py; `make soak-doors` runs it for
ten minutes): one ospreyd serving socket clients, HTTP scrapes and event
streams, Frigate's detectors and fleet jobs through a real redis-server
while its models change every second, and a second ospreyd serving a host
on its pipe. Nothing goes unanswered on any door, and the counters add up
per door and in total, in mem_stats and in /metrics. Memory is the long
run's figure, not checked here."""
import json
import subprocess
import sys

from ospreyd_client import BIN, ROOT, SANITIZED, model

# a sanitizer build serves a few times slower: fewer clients, a little longer
ARGS = (["--seconds", "15", "--clients", "2", "--frigate", "1", "--event-streams", "2"] if SANITIZED
        else ["--seconds", "10"])


def test_every_door_at_once_answers_all_and_adds_up(tmp_path):
    for name in ("ultraface", "ultraface-int8", "blazeface", "face-liveness", "face-embed", "ssd-oidv4",
                 "ssd-oidv4-int8"):
        model(name)
    out = tmp_path / "soak-doors.json"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "soak_doors.py"), "--bin", str(BIN),
                        *ARGS, "--churn-s", "1", "--report-s", "5", "--json-out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert out.exists(), (r.returncode, r.stdout[-3000:], r.stderr[-3000:])
    rec = json.loads(out.read_text())
    assert rec["failed"] == [], (rec["failed"], r.stdout[-3000:])
    assert r.returncode == 0, r.stdout[-3000:]
    assert rec["exits"] == {"ospreyd": 0, "pipe": 0}, open(rec["log"]).read()[-3000:]
    # memory is not among the checks of a short run
    assert not any("resident" in c for c in rec["checks"])
    # every door had work, and each kind of answer it aims at
    req, rows = rec["requestsStats"], rec["requestsStats"]["models"]
    assert rec["socket"]["inference"] > 0 and rec["socket"]["seen"]["error:notLoaded"] > 0
    assert rec["pipe"]["inference"] > 0 and rec["pipe"]["requestsStats"]["served"] > 0
    assert rec["frigate"]["frames"] > 0 and rec["frigate"]["unanswered"] == 0
    assert rec["fleet"]["results"].get("model:served", 0) > 0
    assert rec["fleet"]["results"].get("late:dropped", 0) > 0
    assert rec["fleet"]["results"].get("nomodel:error", 0) > 0
    assert all(by.get("200", 0) > 0 for by in rec["http"]["status"].values()), rec["http"]
    assert rec["http"]["eventRecords"] and min(rec["http"]["eventRecords"]) > 0
    assert rec["churn"]["ops"] >= 2 and rec["churn"]["failed"] == 0, rec["churn"]
    # the doors' rows add up to the whole ledger, each as the script checked
    assert req["received"] == (rec["socket"]["inference"] + rec["frigate"]["frames"]
                               + rec["fleet"]["pushed"]["model"] + rec["fleet"]["pushed"]["late"])
    assert rows["3"]["received"] == rec["frigate"]["frames"] == rec["counters"]["inferZmq"]
    assert rows["4"]["received"] == rec["fleet"]["pushed"]["model"] + rec["fleet"]["pushed"]["late"]
    assert rec["counters"]["totalInference"] == rec["socket"]["inference"]
