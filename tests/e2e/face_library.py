"""The face library the cascade tests name faces from (osprey faces add;
docs/cascades.md, The face library): the astronaut and the footballer,
one photo each. A test module takes the fixture by importing it:

    from face_library import library, recognize  # noqa: F401 (a fixture)
"""
import pytest

from conftest import MEDIA, model, need, run

PEOPLE = (("astronaut", "astronaut.png"), ("footballer", "messi5.jpg"))


def make_library(osprey, path, people=PEOPLE):
    """A library at path holding each (name, photo of MEDIA) of people."""
    for name in ("ultraface", "face-embed"):
        model(name)
    for name, photo in people:
        r = run(osprey, "faces", "--library", path, "add", name, need(MEDIA / photo))
        assert r.returncode == 0, r.stderr
        assert f"{name}: 1 face added" in r.stdout, r.stdout
    return path


@pytest.fixture(scope="module")
def library(osprey, tmp_path_factory):
    """The astronaut and the footballer, one photo each."""
    return make_library(osprey, tmp_path_factory.mktemp("faces") / "faces.db")


def recognize(lib):
    """UltraFace's faces named from the library lib: a model config."""
    return {"model": "ultraface",
            "then": [{"model": "face-embed", "labels": ["face"], "faceLibrary": str(lib)}]}
