"""Where the suite finds its models and media: the way a user does.

A catalog model is found by its name through `osprey models --json`, which
says where the binary under test looks for it; a file outside the catalog
(a labels file, Silero VAD, the SSD's TFLite original) only when
`scripts/fetch-assets.sh --list` names it among what set-up makes. So a
renamed model or asset fails here, by name, on any cache, even one that
still holds an older checkout's files; and `.ci/run` runs the whole suite
on a cache that set-up filled from nothing.
"""
import functools
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("OSPREY_BIN", ROOT / "build" / "bin"))
CACHE = Path(os.environ.get("OSPREY_CACHE", Path.home() / ".cache" / "osprey"))
MEDIA = CACHE / "media"


def need(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"{path} is missing: run scripts/fetch-assets.sh (make check does)")
    return path


@functools.cache
def made_by_setup() -> frozenset:
    """Every file, relative to the cache, that scripts/fetch-assets.sh makes."""
    r = subprocess.run([str(ROOT / "scripts" / "fetch-assets.sh"), "--list"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return frozenset(r.stdout.split())


@functools.cache
def catalog() -> dict:
    """`osprey models --json` of the binary under test, by model name."""
    exe = BIN / "osprey"
    if not exe.exists():
        pytest.fail(f"{exe} is not built: run make")
    r = subprocess.run([str(exe), "models", "--json"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, OSPREY_CACHE=str(CACHE)))
    assert r.returncode == 0, r.stderr
    return {m["name"]: m for m in map(json.loads, r.stdout.splitlines())}


def model(name: str) -> Path:
    """The file of catalog model NAME, present in the cache."""
    entry = catalog().get(name)
    if entry is None:
        pytest.fail(f"no catalog model '{name}' (osprey models lists {sorted(catalog())})")
    if f"models/{entry['file']}" not in made_by_setup():
        pytest.fail(f"catalog model {name} is {entry['file']}, which scripts/fetch-assets.sh "
                    "does not make")
    return need(Path(entry["path"]))


def model_asset(file: str) -> Path:
    """A file of the models folder outside the catalog (labels, Silero VAD,
    the TFLite original), present in the cache and made by set-up."""
    if f"models/{file}" not in made_by_setup():
        pytest.fail(f"scripts/fetch-assets.sh makes no models/{file}")
    return need(CACHE / "models" / file)


def media(file: str) -> Path:
    """A test medium, present in the cache and made by set-up."""
    if f"media/{file}" not in made_by_setup():
        pytest.fail(f"scripts/fetch-assets.sh makes no media/{file}")
    return need(MEDIA / file)
