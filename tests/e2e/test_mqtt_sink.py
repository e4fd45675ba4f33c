"""The MQTT sink of osprey segment and osprey detect against a real mosquitto broker on loopback
that wants a login (a password file) on one listener and TLS (a certificate
signed by a CA this test makes with openssl) on another: the login from the
URL, from --mqtt-password-file and from $OSPREY_MQTT_PASSWORD; a wrong one
ends the run with exit status 1 and a line naming the sink, the password
nowhere in the output; mqtts with the test CA, and refused without it or
with another CA; a broker that never comes is an exit status too. osprey
detect shares the options and behaves the same."""
import os
import subprocess
import time

from conftest import MEDIA, lines, need
from mqtt_broker import PASSWORD, TOPIC, USER, broker, certs, free_port  # noqa: F401 (fixtures)
from test_segment import short_clip, stats  # noqa: F401 (a fixture)


def run_segment(osprey, clip, url, *extra, env=None, live=False):
    """Segment the 12 s clip in 1 s chunks with --mqtt url; returns
    (exit status, records, stdout + stderr, the process's command line as
    ps saw it while it ran)."""
    args = [str(osprey), "segment", str(clip), "--uniform", "1", "--mqtt", url, *map(str, extra)]
    if live:
        args += ["--live", "--speed", "4"]
    e = dict(os.environ)
    e.pop("OSPREY_MQTT_PASSWORD", None)
    e.update(env or {})
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
    cmdline = ""
    if live:
        first = p.stdout.readline()  # running, the sink opened
        with open(f"/proc/{p.pid}/cmdline", "rb") as f:
            cmdline = f.read().replace(b"\0", b" ").decode()
        out, err = p.communicate(timeout=120)
        out = first + out
    else:
        out, err = p.communicate(timeout=120)
    return p.returncode, lines(out), out + err, cmdline


def delivered(broker, osprey, clip, url, *extra, **kw):
    sub = broker.subscribe(12)
    rc, recs, text, cmdline = run_segment(osprey, clip, url, *extra, **kw)
    got, _ = sub.communicate(timeout=60)
    assert PASSWORD not in text and PASSWORD not in cmdline
    assert rc == 0, text
    assert [r["chunk_idx"] for r in lines(got)] == list(range(12)), text
    assert lines(got) == recs
    assert '"failed": false' in text
    return text, cmdline


def test_login_in_the_url(osprey, short_clip, broker):
    url = f"mqtt://{USER}:{PASSWORD}@127.0.0.1:{broker.port}/{TOPIC}"
    text, cmdline = delivered(broker, osprey, short_clip, url, live=True)
    # ps shows the URL with its password overwritten once the sink has it
    assert f"mqtt://{USER}:" in cmdline and f"@127.0.0.1:{broker.port}/{TOPIC}" in cmdline


def test_password_from_file_and_env(osprey, short_clip, broker, tmp_path):
    pw = tmp_path / "mqtt.pw"
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    url = f"mqtt://{USER}@127.0.0.1:{broker.port}/{TOPIC}"
    text, _ = delivered(broker, osprey, short_clip, url, "--mqtt-password-file", pw)
    assert "warning" not in text
    # a file other users can read works, and is warned about by name
    pw.chmod(0o644)
    text, _ = delivered(broker, osprey, short_clip, url, "--mqtt-password-file", pw)
    assert f"warning: --mqtt-password-file {pw} can be read by other users" in text
    pw.chmod(0o600)
    # the environment, the user from --mqtt-user
    delivered(broker, osprey, short_clip, f"mqtt://127.0.0.1:{broker.port}/{TOPIC}",
              "--mqtt-user", USER, env={"OSPREY_MQTT_PASSWORD": PASSWORD})
    # precedence: the file wins over the environment, which wins over the URL
    delivered(broker, osprey, short_clip, url, "--mqtt-password-file", pw,
              env={"OSPREY_MQTT_PASSWORD": "wrong-env"})
    delivered(broker, osprey, short_clip, f"mqtt://{USER}:wrong-url@127.0.0.1:{broker.port}/{TOPIC}",
              env={"OSPREY_MQTT_PASSWORD": PASSWORD})


def refused(osprey, clip, url, *extra, secret, env=None):
    rc, recs, text, _ = run_segment(osprey, clip, url, *extra, env=env)
    assert rc == 1, text
    assert secret not in text
    msg = [l for l in text.splitlines() if "not retrying" in l]
    assert len(msg) == 1, text
    shown = url.split("://")[0] + "://***@" + url.split("@")[-1] if "@" in url else url
    assert msg[0].startswith(f"osprey segment: --mqtt {shown}: "), msg
    assert '"failed": true' in text
    return msg[0]


def test_wrong_password_is_exit_1_without_the_password(osprey, short_clip, broker, tmp_path):
    msg = refused(osprey, short_clip, f"mqtt://{USER}:hunter2-wrong@127.0.0.1:{broker.port}/{TOPIC}",
                  secret="hunter2-wrong")
    assert "refused" in msg and "not authori" in msg.lower()
    pw = tmp_path / "bad.pw"
    pw.write_text("hunter3-wrong\n")
    refused(osprey, short_clip, f"mqtt://{USER}@127.0.0.1:{broker.port}/{TOPIC}",
            "--mqtt-password-file", pw, secret="hunter3-wrong")
    # no login at all: the broker wants one
    refused(osprey, short_clip, f"mqtt://127.0.0.1:{broker.port}/{TOPIC}", secret=PASSWORD)


def test_mqtts_with_the_test_ca(osprey, short_clip, broker, certs, tmp_path):
    pw = tmp_path / "mqtt.pw"
    pw.write_text(PASSWORD)
    pw.chmod(0o600)
    url = f"mqtts://{USER}@127.0.0.1:{broker.tls_port}/{TOPIC}"
    delivered(broker, osprey, short_clip, url, "--mqtt-password-file", pw, "--mqtt-ca", certs.ca)
    # the system's CAs do not know the test CA; another CA did not sign it
    for extra in ([], ["--mqtt-ca", certs.other_ca]):
        msg = refused(osprey, short_clip, url, "--mqtt-password-file", pw, *extra,
                      secret=PASSWORD)
        assert "TLS" in msg
    # TLS against the plain listener: no handshake either
    refused(osprey, short_clip, f"mqtts://{USER}@127.0.0.1:{broker.port}/{TOPIC}",
            "--mqtt-password-file", pw, "--mqtt-ca", certs.ca, secret=PASSWORD)


def test_broker_lost_mid_run_is_reconnected(osprey, short_clip, broker):
    # A live replay makes a record a second. The broker stops right after
    # the third reaches the subscriber (the next is about a second away),
    # and comes back: the records made meanwhile waited in the sink's queue.
    sub = broker.subscribe(3)
    p = subprocess.Popen([str(osprey), "segment", str(short_clip), "--uniform", "1", "--live",
                          "--mqtt", f"mqtt://{USER}:{PASSWORD}@127.0.0.1:{broker.port}/{TOPIC}"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first, _ = sub.communicate(timeout=60)
    broker.close()
    time.sleep(2)
    broker.start()
    sub = broker.subscribe(9, resume=True)
    out, err = p.communicate(timeout=120)
    rest, _ = sub.communicate(timeout=60)
    assert p.returncode == 0, err
    assert [r["chunk_idx"] for r in lines(first)] == [0, 1, 2]
    assert lines(first) + lines(rest) == lines(out)
    assert "retrying" in err and PASSWORD not in out + err
    assert '"dropped": 0' in err


def test_broker_that_never_comes_is_exit_1(osprey, short_clip):
    port = free_port()
    rc, recs, text, _ = run_segment(osprey, short_clip,
                                    f"mqtt://{USER}:{PASSWORD}@127.0.0.1:{port}/{TOPIC}")
    assert len(recs) == 12  # stdout still has every record
    assert rc == 1, text
    assert PASSWORD not in text
    assert "retrying" in text and "could not deliver: 12 of 12 records dropped" in text
    assert f"mqtt://***@127.0.0.1:{port}/{TOPIC}" in text


def test_bad_options(osprey, short_clip, tmp_path):
    rc, _, text, _ = run_segment(osprey, short_clip, "mqtt://h/t", "--mqtt-password-file",
                                 tmp_path / "none")
    assert rc == 2 and "--mqtt-password-file" in text
    r = subprocess.run([str(osprey), "segment", str(short_clip), "--mqtt-user", "x"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "need --mqtt" in r.stderr
    r = subprocess.run([str(osprey), "segment", "--help"], capture_output=True, text=True)
    for opt in ("--mqtt-user", "--mqtt-password-file", "OSPREY_MQTT_PASSWORD", "--mqtt-ca",
                "mqtts://"):
        assert opt in r.stdout


def test_detect_publishes_with_the_same_login_rules(osprey, broker, tmp_path):
    vtest = need(MEDIA / "vtest.avi")
    pw = tmp_path / "mqtt.pw"
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    sub = broker.subscribe(20)
    r = subprocess.run([str(osprey), "detect", "--quiet", "--every", "40", str(vtest), "--mqtt",
                        f"mqtt://{USER}@127.0.0.1:{broker.port}/{TOPIC}",
                        "--mqtt-password-file", str(pw)],
                       capture_output=True, text=True, timeout=300)
    got, _ = sub.communicate(timeout=60)
    assert r.returncode == 0, r.stderr
    assert lines(got) == lines(r.stdout) and len(lines(got)) == 20
    assert PASSWORD not in r.stdout + r.stderr
    # a wrong password: exit status 1, one line, the password nowhere
    r = subprocess.run([str(osprey), "detect", "--quiet", "--every", "40", str(vtest), "--mqtt",
                        f"mqtt://{USER}:hunter4-wrong@127.0.0.1:{broker.port}/{TOPIC}"],
                       capture_output=True, text=True, timeout=300)
    text = r.stdout + r.stderr
    assert r.returncode == 1, text
    assert "hunter4-wrong" not in text
    assert f"osprey detect: --mqtt mqtt://***@127.0.0.1:{broker.port}/{TOPIC}: the broker " \
           "refused the connection" in text
    r = subprocess.run([str(osprey), "detect", "--help"], capture_output=True, text=True)
    assert "--mqtt-password-file" in r.stdout and "OSPREY_MQTT_PASSWORD" in r.stdout
