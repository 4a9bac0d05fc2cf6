"""The C allocator of a process that judges (`flask score`, a Celery worker): memory freed goes back to the system.

glibc's malloc raises its mmap threshold to the largest block freed so far (up to 32 MB) and its trim threshold to
twice that. Once numpy has freed one 2 MB temporary, arrays below 2 MB come from the heap, and the room they leave
there stays with the process: the larger the evaluation, the more of the memory its scoring used was kept. Fixed
thresholds end that. Measured on `flask score` against a judge that answers at once (docs/benchmarks.md): peak
resident memory 128 MB at 4,000 judgments and 142 MB at 40,000 (1.11 times) before, 127 and 136-137 MB (1.08) after.
The mmap threshold is just above the 256 KiB that asyncio takes for every socket read (and then shrinks to what
came): at glibc's default of 128 KiB each read had a mapping of its own, 1 s more of system time over 40,000
judgments; at 288 KiB, 0.2 s. Where blocks above it are freed matters little (the trim threshold).
"""
from __future__ import annotations

import os

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)
MMAP_THRESHOLD = 288 * 1024  # blocks from this size up have mappings of their own, given back when freed
TRIM_THRESHOLD = 1024 * 1024  # free room at the heap's top beyond this goes back to the system


def return_freed_memory() -> bool:
    """Fix glibc malloc's mmap and trim thresholds (setting them stops their adjustment), so that the memory of
    large blocks freed goes back to the system; False, changing nothing, where the C library is not glibc."""
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):  # no such name here: not glibc
        libc = ""
    if not libc.startswith("glibc"):
        return False
    import ctypes  # only where it is used

    mallopt = ctypes.CDLL(None).mallopt
    return all([mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD), mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)])
