"""The incident views: what happened, told from the temporal image without a replay.

* :mod:`~image.views.history` — the states of one partition, topic or broker over a window, with what changed;
* :mod:`~image.views.timeline` and :mod:`~image.views.health` — cluster health over time (gauges and counters);
* :mod:`~image.views.report` — the self-contained HTML incident report;
* :mod:`~image.views.summary` — the one-screen summary of an image (``kraft-replay replay``).

May import :mod:`image`, :mod:`image.temporal` and :mod:`metadata`; never :mod:`replica` or :mod:`cli`.
See docs/health.md.
"""
