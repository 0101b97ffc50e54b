"""The interactive ``kraft-replay shell`` in a real pseudo-terminal: the prompt with the point in time and the
working directory, tab completion of commands and paths, the command history (``history N``, the up arrow, kept
across sessions), ``at`` and ``diff``, ``Ctrl-C`` cancelling a line and ``Ctrl-D`` leaving."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import signal
import sys
import time
from pathlib import Path

import pytest

from image.temporal.times import iso_time
from metadata.log.readers import read_log

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "tests" / "fixtures" / "kafka" / "4.1.1" / "basic" / "__cluster_metadata-0"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a pseudo-terminal on Linux")


class Terminal:
    """``kraft-replay shell`` in a pseudo-terminal: keys in, what the terminal shows out."""

    def __init__(self, history: Path, *args: str) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "KRAFT_REPLAY_SHELL_HISTORY": str(history),
            "TERM": "xterm",
            "COLUMNS": "120",
            "LINES": "40",
        }
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the shell on the terminal
            os.chdir(ROOT)
            os.execve(sys.executable, [sys.executable, "-m", "cli.main", "shell", "--log", str(LOG), *args], env)
        self.seen = ""

    def read_until(self, pattern: str, timeout: float = 60) -> str:
        """What the terminal shows until ``pattern`` (a regular expression) appears; the text before the match and
        the match are consumed."""
        deadline = time.monotonic() + timeout
        while True:
            found = re.search(pattern, self.seen)
            if found:
                text, self.seen = self.seen[: found.end()], self.seen[found.end() :]
                return text
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {pattern!r} in {self.seen!r}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:  # the shell ended
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"the shell ended before {pattern!r}: {self.seen!r}")
                self.seen += chunk.decode(errors="replace")

    def send(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def interrupt(self, next_prompt: str) -> None:
        """Ctrl-C, pressed again (as a person would) until the shell answers with ``^C`` and ``next_prompt``: CPython's
        readline loop takes a SIGINT that lands while it handles a key only with the next key. Any later answer to
        a repeated Ctrl-C is consumed too; a shell that never answers is shown with its threads' signal masks (the
        prompt's thread alone may take SIGINT: :mod:`cli.shell.ctrl_c`)."""
        answer = r"\^C\r\n" + next_prompt
        for attempt in range(6):
            time.sleep(0.5)
            self.send("\x03")
            try:
                self.read_until(answer, timeout=5)
                break
            except AssertionError as e:
                if attempt == 5:
                    raise AssertionError(f"{e}\nthe shell's threads: {self.threads()}") from None
        if attempt:
            with contextlib.suppress(AssertionError):
                while True:
                    self.read_until(answer, timeout=2)

    def threads(self) -> dict[str, dict[str, str]]:
        """Each thread of the shell's process: its signal masks (blocked, ignored, caught, pending) and where it
        waits."""
        found = {}
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            with contextlib.suppress(OSError):
                status = dict(line.split(":\t", 1) for line in (task / "status").read_text().splitlines())
                found[task.name] = {
                    **{k: status[k] for k in ("SigBlk", "SigIgn", "SigCgt", "SigPnd", "ShdPnd") if k in status},
                    "wchan": (task / "wchan").read_text(),
                }
        return found

    def finish(self) -> int:
        """Wait for the shell to end; its exit status."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            try:
                os.read(self.fd, 65536)
            except OSError:
                pass
            time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        raise AssertionError("the shell did not end")


def prompt(offset: int, time_ms: int, path: str) -> str:
    return re.escape(f"[{offset} {iso_time(time_ms)}] {path} >> ")


def test_a_session_in_a_terminal(tmp_path):
    records = read_log(LOG)
    last = records[-1]
    times = {r.offset: r.timestamp for r in records}
    history = tmp_path / "history"
    term = Terminal(history)
    assert "[ kraft-replay shell: " in term.read_until(prompt(last.offset, last.timestamp, "/"))

    # completion: a command, a directory (no space after it), a file (a space after it)
    term.send("l\t")
    term.read_until("ls ")
    term.send("/image/top\t")
    term.read_until("/image/topics/")
    term.send("byN\t\r")
    # in as many columns as the terminal's width allows, as Kafka's ls in a terminal
    assert term.read_until(prompt(last.offset, last.timestamp, "/")).splitlines()[1:-1] == ["alpha  beta  delta  gamma"]
    term.send("cd /image/topics/byName/al\t")
    term.read_until("alpha/")
    term.send("\r")
    here = "/image/topics/byName/alpha"
    term.read_until(prompt(last.offset, last.timestamp, here))
    term.send("cat i\t")
    term.read_until("cat id ")
    term.send("\r")
    assert "iqsQK_yORK-cAkBOJ2clRw" in term.read_until(prompt(last.offset, last.timestamp, here))

    # at: the tree and the prompt move, the working directory stays while it exists
    term.send("at 100\r")
    assert f"offset 100 ({iso_time(times[100])})" in term.read_until(prompt(100, times[100], here))
    term.send("cat id\r")
    assert "vD3bFG-OSKyD9tsWFoxPag" in term.read_until(prompt(100, times[100], here))

    # diff against another point, under the working directory
    term.send("diff 150\r")
    text = term.read_until(prompt(100, times[100], here))
    assert f"--- offset 100 ({iso_time(times[100])})" in text and f"+++ offset 150 ({iso_time(times[150])})" in text
    assert "-/image/topics/byName/alpha/id: vD3bFG-OSKyD9tsWFoxPag" in text
    assert "+/image/topics/byName/alpha/id: iqsQK_yORK-cAkBOJ2clRw" in text

    # next: to the next change of the working directory's node (the topic's deletion): out of the gone directory
    term.send("next\r")
    text = term.read_until(prompt(109, times[109], "/image/topics/byName"))
    assert "-/image/topics/byName/alpha/name: alpha" in text

    # Ctrl-C drops the line being typed
    term.send("cat /image/provenan")
    term.read_until("provenan")
    term.interrupt(prompt(109, times[109], "/image/topics/byName"))

    # the history: history N (Kafka's meaning), the up arrow
    term.send("history 3\r")
    assert term.read_until(prompt(109, times[109], "/image/topics/byName")).splitlines()[1:-1] == [
        "    5  diff 150",
        "    6  next",
        "    7  history 3",
    ]
    term.send("\x1b[A\x1b[A\x1b[A\r")  # up three times: "diff 150" again
    assert "+++ offset 150" in term.read_until(prompt(109, times[109], "/image/topics/byName"))

    # Ctrl-D leaves; the history is kept for the next session
    term.send("\x04")
    assert term.finish() == 0
    assert history.read_text().splitlines() == [
        "ls /image/topics/byName/",
        "cd /image/topics/byName/alpha/",
        "cat id",
        "at 100",
        "cat id",
        "diff 150",
        "next",
        "history 3",
        "diff 150",
    ]
    again = Terminal(history)
    again.read_until(prompt(last.offset, last.timestamp, "/"))
    again.send("history 2\r")
    assert again.read_until(prompt(last.offset, last.timestamp, "/")).splitlines()[1:-1] == [
        "    8  diff 150",
        "    9  history 2",
    ]
    again.send("exit\r")
    assert again.finish() == 0


def test_errors_do_not_end_the_session(tmp_path):
    """Kafka's messages, and a failure Kafka's shell would end on (Kafka 4.1's ``find`` of the features), printed
    without leaving the session."""
    term = Terminal(tmp_path / "history", "--kafka-version", "4.1")
    records = read_log(LOG)
    here = prompt(records[-1].offset, records[-1].timestamp, "/")
    term.read_until(here)
    term.send("cd /nope\r")
    assert "cd: /nope: no such directory." in term.read_until(here)
    term.send("find /image/features\r")
    text = term.read_until(here)
    assert "/image/features/metadataVersion" in text
    assert "Unexpected error: Expected zkMigrationState to be a valid child of /image/features, but it was not." in text
    term.send('cat "/image/provenance\r')
    assert "unclosed quotation" in term.read_until(here)
    term.send("exit\r")
    assert term.finish() == 0


def test_at_the_prompt_only_the_main_thread_takes_ctrl_c(tmp_path):
    """The threads the loading started (pyarrow's) block SIGINT, the prompt's thread takes it: a Ctrl-C delivered to
    another thread would leave readline waiting for a key."""
    term = Terminal(tmp_path / "history")
    records = read_log(LOG)
    term.read_until(prompt(records[-1].offset, records[-1].timestamp, "/"))
    threads = term.threads()
    sigint = 1 << (signal.SIGINT - 1)
    assert len(threads) > 1  # (else the test shows nothing)
    assert {tid: bool(int(t["SigBlk"], 16) & sigint) for tid, t in threads.items()} == {
        tid: tid != str(term.pid) for tid in threads
    }
    assert int(threads[str(term.pid)]["SigCgt"], 16) & sigint
    term.send("exit\r")
    assert term.finish() == 0
