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


@pytest.fixture(autouse=True)
def no_calibration_probe(monkeypatch):
    """Estimates in tests use the defaults as declared: the calibration
    probe (timings.probe(), a few seconds of compiling) would make them
    this machine's and its time. test_calibration.py gives it a fake
    compiler."""
    from foliolab import timings

    real = timings.probe
    monkeypatch.setattr(timings, "probe", lambda runner=None: None)
    return real
