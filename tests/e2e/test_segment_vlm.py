"""osprey segment's VLM client against vlm_stub.py (a TEST DOUBLE of an
OpenAI-compatible server; no VLM runs here): --vlm-concurrency N puts
exactly N requests in flight, the warm-up included (the stub counts them);
HTTPS with a CA this test makes, the API key from --vlm-key-file and from
$OSPREY_VLM_API_KEY checked by the stub and never printed; a chunked reply
and a redirect handled."""
import os
import subprocess

import pytest

from certs import make_certs
from conftest import lines
from test_segment import short_clip, stats, stub_factory  # noqa: F401 (fixtures)

KEY = "sk-test-7f3a9c1e5b"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("vlm-certs"))


@pytest.fixture
def key_file(tmp_path):
    f = tmp_path / "vlm.key"
    f.write_text(KEY + "\n")
    f.chmod(0o600)
    return f


def segment(osprey, clip, url, *extra, env=None):
    e = dict(os.environ)
    e.pop("OSPREY_VLM_API_KEY", None)
    e.update(env or {})
    r = subprocess.run([str(osprey), "segment", str(clip), "--uniform", "1", "--vlm", url,
                        "--vlm-model", "m", *map(str, extra)],
                       capture_output=True, text=True, timeout=300, env=e)
    return r.returncode, lines(r.stdout), r.stdout + r.stderr


def served(stub):
    return [r for r in stub.records() if "index" in r]


@pytest.mark.parametrize("n", [1, 3])
def test_concurrency_is_exactly_n(osprey, short_clip, stub_factory, n):
    # Every reply takes 0.8 s and the 12 chunks are ready at once: the
    # requests pile up to the bound, never past it.
    stub = stub_factory("--delays", "0.8")
    rc, recs, text = segment(osprey, short_clip, stub.url, "--vlm-concurrency", n)
    assert rc == 0, text
    assert len(recs) == 12 and all(r["response"].startswith("frames=") for r in recs)
    seen = served(stub)
    assert len(seen) == 13 and seen[0]["warmup"]
    assert max(r["inflight"] for r in seen) == n


def https_stub(stub_factory, certs, *extra):
    stub = stub_factory("--tls-cert", str(certs.cert), "--tls-key", str(certs.key), *extra)
    return stub, stub.url.replace("http://", "https://")


def test_https_with_the_key_from_file_and_env(osprey, short_clip, stub_factory, certs, key_file,
                                              tmp_path):
    stub, url = https_stub(stub_factory, certs, "--api-key-file", str(key_file))
    rc, recs, text = segment(osprey, short_clip, url, "--vlm-ca", certs.ca, "--vlm-key-file",
                             key_file)
    assert rc == 0, text
    assert KEY not in text
    assert [r["chunk_idx"] for r in recs] == list(range(12))
    assert all(r["response"].startswith("frames=") and "vlm_error" not in r for r in recs)
    assert len(served(stub)) == 13 and all(r["auth"] is True for r in served(stub))

    stub, url = https_stub(stub_factory, certs, "--api-key-file", str(key_file))
    rc, recs, text = segment(osprey, short_clip, url, "--vlm-ca", certs.ca,
                             env={"OSPREY_VLM_API_KEY": KEY})
    assert rc == 0, text
    assert KEY not in text
    assert len(served(stub)) == 13 and all(r["auth"] is True for r in served(stub))

    # the file wins over the environment
    stub, url = https_stub(stub_factory, certs, "--api-key-file", str(key_file))
    rc, recs, text = segment(osprey, short_clip, url, "--vlm-ca", certs.ca, "--vlm-key-file",
                             key_file, env={"OSPREY_VLM_API_KEY": "sk-wrong-env"})
    assert rc == 0, text
    assert all(r["auth"] is True for r in served(stub))


def test_wrong_key_or_untrusted_certificate_fail_the_warmup(osprey, short_clip, stub_factory,
                                                           certs, key_file, tmp_path):
    stub, url = https_stub(stub_factory, certs, "--api-key-file", str(key_file))
    rc, recs, text = segment(osprey, short_clip, url, "--vlm-ca", certs.ca,
                             env={"OSPREY_VLM_API_KEY": "sk-wrong-0451"})
    assert rc == 1 and "warm-up" in text and "401" in text, text
    assert "sk-wrong-0451" not in text
    assert [r["auth"] for r in served(stub)] == [False]
    # the system's CAs do not know the test CA; another CA did not sign it
    for extra in ([], ["--vlm-ca", certs.other_ca]):
        rc, recs, text = segment(osprey, short_clip, url, "--vlm-key-file", key_file, *extra)
        assert rc == 1 and "warm-up" in text and "certificate" in text.lower(), text
        assert KEY not in text


def test_chunked_reply_and_redirect(osprey, short_clip, stub_factory, certs, key_file):
    stub, url = https_stub(stub_factory, certs, "--api-key-file", str(key_file), "--chunked",
                           "--redirect", "301")
    rc, recs, text = segment(osprey, short_clip, url + "/v1", "--vlm-ca", certs.ca,
                             "--vlm-key-file", key_file, "--vlm-fps", "2")
    assert rc == 0, text
    assert [r["response"] for r in recs] == ["frames=2 prompt=Describe what happens in this video clip"] * 12
    legs = [r for r in stub.records() if "redirect" in r]
    assert len(legs) == 13 and {r["redirect"] for r in legs} == {"/v1/chat/completions"}
    seen = served(stub)
    assert len(seen) == 13
    # the POST stayed a POST with its body, and the key went along (same host)
    assert {r["path"] for r in seen} == {"/moved/v1/chat/completions"}
    assert all(r["auth"] is True for r in seen)
    assert all(r["images"] == (3 if r["warmup"] else 2) for r in seen)


def test_help_tells_the_vlm_options(osprey):
    r = subprocess.run([str(osprey), "segment", "--help"], capture_output=True, text=True)
    for opt in ("--vlm-key-file", "OSPREY_VLM_API_KEY", "--vlm-ca", "http(s)://",
                "Authorization: Bearer"):
        assert opt in r.stdout
