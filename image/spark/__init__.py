"""Internals of the Spark engine (public entry points: :mod:`image.spark_engine`).

``plan``: bases, targets, provenance; ``transactions``: the pairing of metadata transaction markers
(shared with :mod:`replica.spark_changes`); ``parts``: the image parts as set-based transforms of event
frames; ``run``: one replay pass (many target offsets, one base).
"""
