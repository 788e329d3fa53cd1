"""What every LAVA executor says of its runs: the details of its record
in the run's manifest, read back, and the report's words for them.

job.py's LavaJobs writes the details every LAVA executor has (its
``record``: the device type, tags, LAVA's version, the rounds per job);
the lab's executor adds its server and where its workers fetch the
artifacts. Each LAVA executor class takes LavaRecord before LavaJobs.
"""

from __future__ import annotations

from typing import Any

from foliolab.executors.base import (
    RECORD_KEYS,
    Detail,
    ExecutorRecord,
    read_detail,
)

# The details a LAVA executor's record may hold (job.py's and the lab's).
DETAILS = (
    "device_type",
    "tags",
    "lava_version",
    "rounds_per_block",
    "server",
    "artifacts_url",
)
assert set(DETAILS) <= set(RECORD_KEYS)  # each written where it always was


class LavaRecord:
    """The record's side of a LAVA executor class."""

    # a LAVA job carries the boot's job script only (job.py's job_tar)
    carries_files = False

    @classmethod
    def read_details(cls, d: dict[str, Any]) -> dict[str, Detail]:
        """Its details as written: an empty value is the file's filler
        (RECORD_KEYS), not a detail this executor gave."""
        read = {key: read_detail(d, key) for key in DETAILS}
        return {k: v for k, v in read.items() if v != RECORD_KEYS[k]}

    @classmethod
    def report_note(cls, rec: ExecutorRecord) -> str:
        version = rec.details.get("lava_version", "")
        if not version:  # not said by the record (none of today's)
            return f"; boots run by the {rec.kind} executor"
        where = rec.details.get("server", "") or "this machine"
        device = rec.details.get("device_type", "") or "?"
        return (
            f"; boots run as LAVA {version} jobs "
            f"({rec.kind}, device type {device}, "
            f"{where}), records on the console"
        )
