"""osprey listen: Silero VAD through the streaming scorer, on speech that
espeak-ng speaks at test time (Debian package espeak-ng; scripts/bootstrap.sh
installs it), padded with seconds of silence."""
import array
import json
import shutil
import subprocess
import wave

import pytest

from conftest import model_asset, need, run, lines

PHRASES = [
    "The quick brown fox jumps over the lazy dog",
    "Osprey listens to the live stream",
    "Seven hundred and twenty one",
]
SILENCE_S = [2.0, 3.0, 3.0, 2.0]  # before, between and after the phrases
LOUD = 300  # |sample| above this is voiced (espeak-ng's own silence is 0)


def espeak(text, path):
    exe = shutil.which("espeak-ng")
    if exe is None:
        pytest.fail("espeak-ng is missing: install the Debian package espeak-ng "
                    "(scripts/bootstrap.sh does)")
    subprocess.run([exe, "-w", str(path), text], check=True, capture_output=True)
    with wave.open(str(path), "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1
        return w.getframerate(), array.array("h", w.readframes(w.getnframes()))


def voiced(samples):
    idx = [i for i, v in enumerate(samples) if abs(v) > LOUD]
    return idx[0], idx[-1] + 1


def write_wav(path, rate, samples, channels=1):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.tobytes())


@pytest.fixture(scope="module")
def speech(tmp_path_factory):
    """A WAV of the phrases between stretches of silence, and where each
    phrase is really voiced (seconds)."""
    d = tmp_path_factory.mktemp("listen")
    out = array.array("h")
    spans = []
    rate = None
    for i, text in enumerate(PHRASES):
        r, s = espeak(text, d / f"p{i}.wav")
        rate = rate or r
        assert r == rate
        out.extend([0] * int(SILENCE_S[i] * rate))
        a, b = voiced(s)
        spans.append(((len(out) + a) / rate, (len(out) + b) / rate))
        out.extend(s)
    out.extend([0] * int(SILENCE_S[-1] * rate))
    path = d / "speech.wav"
    write_wav(path, rate, out)
    stereo = array.array("h")
    for v in out:
        stereo.extend((v, v))
    write_wav(d / "stereo.wav", rate, stereo, channels=2)
    return {"path": path, "stereo": d / "stereo.wav", "spans": spans, "rate": rate,
            "duration": len(out) / rate, "dir": d}


def segments(recs):
    return [r for r in recs if "start" in r]


def check_segments(segs, spans):
    assert segs, "no speech found"
    for a, b in spans:
        inside = [s for s in segs if s["start"] <= a + 0.15 and s["end"] >= b - 0.15]
        assert inside, f"phrase {a:.2f}-{b:.2f} s is not inside one segment: {segs}"
    for s in segs:
        assert 0 <= s["start"] < s["end"]
        assert 0.5 <= s["peak"] <= 1.0
        # no segment in the silent stretches: each overlaps a phrase
        assert any(s["start"] < b + 0.4 and s["end"] > a - 0.4 for a, b in spans), \
            f"segment {s} lies in silence (phrases at {spans})"


def test_segments_cover_the_speech(osprey, speech):
    model_asset("silero_vad_v5.onnx")
    r = run(osprey, "listen", speech["path"])
    assert r.returncode == 0, r.stderr
    recs = lines(r.stdout)
    check_segments(segments(recs), speech["spans"])
    assert "resampled to 16 kHz" in r.stderr  # espeak-ng speaks at 22050 Hz


def test_stereo_gives_the_same_segments(osprey, speech):
    model_asset("silero_vad_v5.onnx")
    mono = run(osprey, "listen", speech["path"])
    stereo = run(osprey, "listen", "--model", "silero-vad", speech["stereo"])
    assert stereo.returncode == 0, stereo.stderr
    assert lines(stereo.stdout) == lines(mono.stdout)


def test_threshold_changes_what_counts(osprey, speech):
    model_asset("silero_vad_v5.onnx")
    strict = run(osprey, "listen", "--threshold", "0.99", speech["path"])
    loose = run(osprey, "listen", "--threshold", "0.3", speech["path"])
    assert strict.returncode == 0 and loose.returncode == 0
    s, l = segments(lines(strict.stdout)), segments(lines(loose.stdout))
    total = lambda segs: sum(x["end"] - x["start"] for x in segs)
    assert total(s) < total(l)
    assert all(x["peak"] >= 0.99 for x in s)


def test_live_replay(osprey, speech):
    """Real-time replay of one phrase: readings arrive while the file plays,
    each with an age that is a whole number of 32 ms chunks, and the segments
    found live cover the phrase as the offline pass does."""
    model_asset("silero_vad_v5.onnx")
    rate, s = espeak(PHRASES[1], speech["dir"] / "live.wav")
    a, b = voiced(s)
    pad = int(1.0 * rate)
    out = array.array("h", [0] * pad)
    out.extend(s)
    out.extend([0] * pad)
    path = speech["dir"] / "live-padded.wav"
    write_wav(path, rate, out)
    r = run(osprey, "listen", "--live", path)
    assert r.returncode == 0, r.stderr
    recs = lines(r.stdout)
    live = [x["live"] for x in recs if "live" in x]
    chunks = int(len(out) * 16000 / rate) // 512
    assert len(live) >= chunks // 2, f"{len(live)} readings for {chunks} chunks"
    ts = [x["t"] for x in live]
    assert ts == sorted(ts) and len(set(ts)) == len(ts)  # newer frames only, never repeated
    for x in live:
        assert x["age_ms"] >= 0 and x["age_ms"] % 32 == 0, x
        assert 0.0 <= x["score"] <= 1.0
    assert max(x["score"] for x in live) >= 0.9
    check_segments(segments(recs), [((pad + a) / rate, (pad + b) / rate)])


def test_help_is_truthful(osprey):
    r = run(osprey, "listen", "--help")
    assert r.returncode == 0
    for word in ("--model", "--threshold", "--live", "silero-vad", "PCM 16-bit", "age_ms"):
        assert word in r.stdout
    r = run(osprey, "--help")
    assert "listen" in r.stdout


def test_bad_input_exits_2(osprey, tmp_path):
    text = tmp_path / "notes.wav"
    text.write_text("not audio\n")
    r = run(osprey, "listen", text)
    assert r.returncode == 2 and "not a WAV file" in r.stderr
    r = run(osprey, "listen", tmp_path / "missing.wav")
    assert r.returncode == 2 and "missing.wav" in r.stderr
    eight = tmp_path / "eight.wav"
    with wave.open(str(eight), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(8000)
        w.writeframes(bytes(800))
    r = run(osprey, "listen", eight)
    assert r.returncode == 2 and "8-bit" in r.stderr
    for args in (["--threshold", "0"], ["--threshold", "x"], ["--frobnicate"], []):
        r = run(osprey, "listen", *args, *([] if not args or args[0] == "--frobnicate" else [eight]))
        assert r.returncode == 2, (args, r.stderr)
    r = run(osprey, "listen", "--model", "nonesuch", eight)
    assert r.returncode == 2 and "unknown model" in r.stderr


def test_missing_model_says_how_to_fetch(osprey, tmp_path, speech):
    r = subprocess.run([str(osprey), "listen", str(speech["path"])], capture_output=True,
                       text=True, env={"OSPREY_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin"},
                       timeout=60)
    assert r.returncode == 1
    assert "fetch-assets.sh" in r.stderr
