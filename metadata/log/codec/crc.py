"""CRC-32C (Castagnoli), the checksum of a record batch: the C function of the ``crc32c`` package.

That package's ``__init__`` reads its own version through ``importlib.metadata`` and imports its command line
(argparse, email: ≈ 25 ms of every start, a tenth of the imports of ``replay --log``). The extension module
holding the function is loaded straight from the package's directory when it is there; otherwise (another
layout) the package is imported as usual."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
from collections.abc import Callable


def _load() -> Callable[[bytes], int]:
    spec = importlib.util.find_spec("crc32c")  # finds the package without running its __init__
    for root in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(root, "_crc32c" + suffix)
            if os.path.isfile(path):
                loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
                loader.exec_module(module)
                return module.crc32c
    from crc32c import crc32c as packaged

    return packaged


crc32c: Callable[[bytes], int] = _load()
"""``crc32c(data)``: the CRC-32C of ``data`` (bytes-like), an unsigned 32-bit int."""
