"""A one-line progress bar on stderr (no dependency): steps or minutes done, losses, speed, ETA.
On a terminal it redraws in place; otherwise (a log file) it prints a line every `every` seconds."""

import sys
import time


def _clock(s):
    s = int(max(0, s))
    return "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60) if s >= 3600 else "%d:%02d" % (s // 60, s % 60)


class Progress:
    def __init__(self, total_steps=None, total_seconds=None, width=28, every=30.0, stream=sys.stderr):
        self.total_steps, self.total_seconds = total_steps, total_seconds
        self.width, self.every, self.stream = width, every, stream
        self.t0 = time.time()
        self.last_print = 0.0
        self.tty = stream.isatty()

    def fraction(self, step):
        f = 0.0
        if self.total_steps:
            f = max(f, step / self.total_steps)
        if self.total_seconds:
            f = max(f, (time.time() - self.t0) / self.total_seconds)
        return min(1.0, f)

    def update(self, step, text, force=False, fraction=None):
        """fraction: the part of the run done, when the caller measures it (e.g. training time
        without the evaluations); by default steps or wall time against the totals."""
        now = time.time()
        if not self.tty and not force and now - self.last_print < self.every:
            return
        self.last_print = now
        f = self.fraction(step) if fraction is None else min(1.0, fraction)
        el = now - self.t0
        eta = el * (1 - f) / f if f > 0 else 0
        fill = int(round(f * self.width))
        bar = "=" * max(0, fill - 1) + (">" if fill else "") + " " * (self.width - fill)
        line = "[%s] %3d%% step %d  %s  %s elapsed, ETA %s" % (bar, 100 * f, step, text, _clock(el), _clock(eta))
        if self.tty:
            self.stream.write("\r" + line + "\033[K")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def done(self):
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
