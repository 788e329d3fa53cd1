"""records.write_whole, the one writer of the lab's records: a reader sees
the old file or the new one, never a part, and a failed write leaves
neither a part file nor a changed record."""

from pathlib import Path

import pytest

from foliolab import records


def test_a_record_is_written_whole_and_no_part_stays(tmp_path):
    path = tmp_path / "outcomes.json"
    assert records.write_whole(path, '{"a": 1}\n') == path
    records.write_whole(path, b'{"a": 2}\n')
    assert path.read_text() == '{"a": 2}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["outcomes.json"]


def test_a_failed_write_keeps_the_old_record_and_removes_its_part(
    tmp_path, monkeypatch
):
    path = tmp_path / "rundir.json"
    records.write_whole(path, "old\n")
    replace = Path.replace

    def no_rename(self, target):
        assert self.read_text() == "new\n"  # the part was written whole
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "replace", no_rename)
    with pytest.raises(OSError):
        records.write_whole(path, "new\n")
    monkeypatch.setattr(Path, "replace", replace)
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["rundir.json"]


def test_two_writers_never_share_a_part_file(tmp_path, monkeypatch):
    """Each writer's part is named for its process: a second process
    writing the same record cannot rename the first one's half-written
    part over it."""
    path = tmp_path / "timings.json"
    seen = []
    replace = Path.replace

    def note(self, target):
        seen.append(self.name)
        return replace(self, target)

    monkeypatch.setattr(Path, "replace", note)
    monkeypatch.setattr(records.os, "getpid", lambda: 101)
    records.write_whole(path, "a")
    monkeypatch.setattr(records.os, "getpid", lambda: 202)
    records.write_whole(path, "b")
    assert seen == ["timings.json.part101", "timings.json.part202"]
