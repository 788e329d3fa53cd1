import pytest

from foliolab import paths


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    """A private cache directory, so unit tests never touch the real one."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("FOLIOLAB_CACHE", str(cache))
    return cache


@pytest.fixture
def data():
    from pathlib import Path

    return Path(__file__).parent / "data"


@pytest.fixture(autouse=True)
def no_real_cache_by_accident(monkeypatch):
    """Keep the project root importable; tests pick caches explicitly."""
    yield paths
