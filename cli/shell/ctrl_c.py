"""Ctrl-C at the interactive prompt: SIGINT for the main thread alone (this module imports nothing that starts a
thread, so that the shell can hold SIGINT before its imports start any)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def held_for_the_prompt() -> Iterator[None]:
    """SIGINT blocked in this (the main) thread until the prompt takes it (:func:`take_ctrl_c`), the signal mask
    and SIGINT's handler as they were afterwards; enter it before the image is loaded. The threads started meanwhile
    (by the libraries the loading imports) inherit the block, so a Ctrl-C at the prompt goes to the main thread and
    interrupts readline's wait for a key. Delivered to another thread, it would only flag Python's handler: the wait
    would go on, and the line would not be cancelled. (A Ctrl-C while the image loads reaches the prompt once it
    shows: ``^C`` and a new prompt.)"""
    handler = signal.getsignal(signal.SIGINT)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if threading.current_thread() is threading.main_thread() and handler is not None:
            signal.signal(signal.SIGINT, handler)


def take_ctrl_c() -> None:
    """Ctrl-C to the prompt: unblocked in this thread (:func:`held_for_the_prompt`), and Python's handler installed
    where the shell was started with SIGINT ignored (as by ``nohup``), which Python keeps."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
