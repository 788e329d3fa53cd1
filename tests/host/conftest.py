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


# Marks of the tests that build, boot, compile mm/ or read Debian's
# archive: under `pytest -n 2 --dist loadgroup` (make test) they run one
# after another on one worker, in the order they were collected, while
# the other worker takes the unit tests. Two QEMU guests under TCG on a
# two-core machine would each get half a core, and their timeouts are set
# for a whole one.
HEAVY = ("qemu", "robot", "archive", "bisect")


# first: xdist reads the group when its own hook runs
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(item.get_closest_marker(m) for m in HEAVY):
            item.add_marker(pytest.mark.xdist_group("heavy"))


@pytest.fixture
def nothing_built(monkeypatch) -> list[str]:
    """Every build, unpack and image stood in by a call that fails: a
    test that a command refuses its input before any of them."""
    from foliolab.kernel import build, image, source, store, trees

    calls: list[str] = []

    def called(name):
        def f(*a, **kw):
            calls.append(name)
            raise AssertionError(f"{name} called")

        return f

    for module, name in (
        (build, "build_kernel"),
        (store, "build_and_keep"),
        (image, "build_image"),
        (image, "build_guest_binaries"),
        (source, "prepare_base"),
        (trees, "variant_tree"),
        (trees, "tree_of"),
    ):
        monkeypatch.setattr(module, name, called(name))
    return calls
