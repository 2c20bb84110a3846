"""Memory of a long ``gazetteer eval localize`` run: measured per instance, handed back.

Each instance indexes a whole checkout in process (a Java repository's index is several
hundred MiB of small Python objects) and nothing of it is needed by the next one. Two
things made the run's resident memory climb across instances (issue 17 saw 9.9 GB after
20 instances; on the multi-language split here, 223 MiB after the first instance, 1.4 GiB
after jackson-core's, never handed back; docs/RETRIEVAL_MULTILANG.md):

- the previous instance's index stayed referenced while the next one was built (a loop
  variable), so the peak held two indexes; `eval_localize` now builds and drops each
  index inside one call;
- what CPython frees goes back to its allocator, and glibc keeps the freed pages of its
  arenas mapped: `release` collects the cycles and asks glibc to return the free pages
  (``malloc_trim``), so that the resident size measured between instances is what is
  live.

`resident_mb` reads the resident size from ``/proc/self/statm`` (Linux) and falls back
to the peak (``getrusage``) elsewhere.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import resource
from collections.abc import Callable
from functools import cache
from pathlib import Path

_STATM = Path("/proc/self/statm")


def resident_mb() -> int:
    """The process's resident memory now, MiB (the peak where /proc is missing)."""
    try:
        pages = int(_STATM.read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return pages * os.sysconf("SC_PAGE_SIZE") // 2**20


def release() -> int:
    """Collect garbage and return free heap pages to the system; resident MiB after."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
    return resident_mb()


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    # glibc only: musl and macOS have no malloc_trim (their allocators return pages).
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] | None = getattr(ctypes.CDLL(name), "malloc_trim", None)
        return trim
    except OSError:
        return None
