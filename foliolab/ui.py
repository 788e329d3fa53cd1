"""Terminal output: one progress line on a TTY, plain periodic lines
otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``Progress('build patched/perf', total)``; call ``step()`` per item."""

    def __init__(
        self,
        label: str,
        total: int | None = None,
        stream: TextIO = sys.stderr,
        interval: float = 30.0,
        eta: bool = False,
    ) -> None:
        self.label = label
        self.eta = eta  # a bar's ETA from its rate so far
        self.total = total
        self.done = 0
        self.stream = stream
        self.tty = stream.isatty()
        self.start = time.monotonic()
        self.interval = interval
        self._last = 0.0
        self.note = ""  # appended to the line, e.g. a run's ETA

    def _line(self) -> str:
        el = time.monotonic() - self.start
        mins, secs = divmod(int(el), 60)
        if self.total:
            frac = min(self.done / self.total, 1.0)
            bar = "#" * int(frac * 30)
            line = (
                f"{self.label} [{bar:<30}] {frac * 100:3.0f}% "
                f"{mins}:{secs:02d}"
            )
            if self.eta and self.done:
                left = int(el * max(self.total - self.done, 0) / self.done)
                line += f" ETA {left // 60}:{left % 60:02d}"
        else:
            line = f"{self.label} {self.done} {mins}:{secs:02d}"
        return f"{line} ({self.note})" if self.note else line

    def step(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.tty and now - self._last > 0.2:
            self.stream.write("\r" + self._line())
            self.stream.flush()
            self._last = now
        elif not self.tty and now - self._last > self.interval:
            self.stream.write(self._line() + "\n")
            self.stream.flush()
            self._last = now

    def finish(self, status: str = "done") -> float:
        el = time.monotonic() - self.start
        if self.tty:
            self.stream.write("\r\033[K")
        self.stream.write(f"{self.label}: {status} in {el:.1f} s\n")
        self.stream.flush()
        return el
