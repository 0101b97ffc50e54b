"""The interactive shell: a prompt showing the point in time and the working directory, line editing and tab
completion of commands and paths (GNU readline, in Python's standard library: nothing to install and nothing to
load at start), command history kept across sessions, ``Ctrl-C`` cancelling the line (or a running command) and
``Ctrl-D`` / ``exit`` leaving."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TextIO

from cli.shell.args import split_line
from cli.shell.commands import ExitShell, completions, run
from cli.shell.ctrl_c import take_ctrl_c
from cli.shell.session import Context, Session
from image.node.java import JavaException
from image.temporal.times import iso_time
from metadata.log.cache import cache_root

HISTORY_LENGTH = 1000
"""Lines of history kept across sessions."""


def history_path() -> Path:
    """Where the command history is kept: ``$KRAFT_REPLAY_SHELL_HISTORY``, else
    ``shell-history`` in kraft-replay's cache directory (:func:`~metadata.log.cache.cache_root`)."""
    configured = os.environ.get("KRAFT_REPLAY_SHELL_HISTORY")
    return Path(configured) if configured else cache_root() / "shell-history"


def prompt(session: Session) -> str:
    """``[<offset> <time>] <working directory> >> ``."""
    return f"[{session.offset} {iso_time(session.provenance.last_contained_log_time_ms)}] {session.cwd} >> "


class Shell:
    """One interactive session on a terminal (``out``; lines read with ``input``, so with readline when there is
    one)."""

    def __init__(self, session: Session, out: TextIO = sys.stdout) -> None:
        self.session = session
        self.out = out
        self.history_file = history_path()
        self.readline = _readline()

    def remember(self, line: str) -> None:
        """Add a line to the history, trailing blanks dropped (not a blank one, one starting with a space, or the
        previous one again: JLine's defaults in Kafka's shell)."""
        line = line.rstrip()
        history = self.session.history
        if not line.strip() or line.startswith(" ") or (history and history[-1] == line):
            return
        history.append(line)
        if self.readline is not None:
            self.readline.add_history(line)

    def load_history(self) -> None:
        try:
            lines = self.history_file.read_text(encoding="utf-8").splitlines()
        except OSError:
            return
        for line in lines[-HISTORY_LENGTH:]:
            self.remember(line)

    def save_history(self) -> None:
        try:
            self.history_file.parent.mkdir(parents=True, exist_ok=True)
            self.history_file.write_text(
                "".join(line + "\n" for line in self.session.history[-HISTORY_LENGTH:]), encoding="utf-8"
            )
        except OSError as e:
            print(f"warning: the command history was not saved: {e}", file=sys.stderr)

    def complete(self, text: str, state: int) -> str | None:
        """readline's completer: the ``state``-th completion of the line up to the cursor."""
        if self.readline is None:
            return None
        if state == 0:
            line = self.readline.get_line_buffer()[: self.readline.get_endidx()]
            try:
                self._candidates = completions(self.session, line)
            except Exception:  # noqa: BLE001 — a completion never breaks the prompt
                self._candidates = []
        return self._candidates[state] if state < len(self._candidates) else None

    def run(self, banner: str) -> None:
        """Read and run commands until ``exit`` or end of input."""
        if self.readline is not None:
            self.readline.set_auto_history(False)
            self.readline.set_completer_delims(" \t\n")
            self.readline.set_completer(self.complete)
            self.readline.parse_and_bind("tab: complete")
        self.load_history()
        take_ctrl_c()
        self.out.write(banner + "\n")
        self.session.image_at(self.session.offset)
        if self.session.unpublished is not None:
            self.out.write(f"(Kafka's shell shows the empty image of this file: {self.session.unpublished})\n")
        ctx = Context(self.session, self.out, interactive=True)
        try:
            while True:
                try:
                    line = input(prompt(self.session))
                except KeyboardInterrupt:
                    self.out.write("^C\n")
                    continue
                except EOFError:
                    self.out.write("\n")
                    return
                self.remember(line)
                ctx.screen_width = shutil.get_terminal_size().columns if self.out.isatty() else None
                try:
                    run(ctx, split_line(line))
                except ExitShell:
                    return
                except KeyboardInterrupt:
                    self.out.write("^C\n")
                except JavaException as e:  # Kafka's shell would end here
                    self.out.write(f"Unexpected error: {e}\n")
                except ValueError as e:
                    self.out.write(f"{e}\n")
                self.out.flush()
        finally:
            self.save_history()


def _readline():  # noqa: ANN202 — the readline module, or None where Python has none
    try:
        import readline
    except ImportError:
        return None
    return readline
