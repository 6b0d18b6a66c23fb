"""Keep the trainer's freed buffers in the C heap instead of handing them back to the kernel (glibc).

Why: the PPO update allocates and frees the same few-megabyte activations and gradients every
minibatch. glibc serves blocks above its mmap threshold with fresh ``mmap`` pages and unmaps them on
free (and trims the heap top above its trim threshold), so the next minibatch pays a page fault per
4 KiB page on first touch: in a profile of the default update on 2 cores, ``addmm`` writing its bias
into a fresh 24,576 x 128 output took 2.4 ms against 0.07 ms into reused memory, and operators
without counted arithmetic took a third of the update's time. Fixing the mmap threshold at 32 MiB
and the trim threshold at 1 GiB keeps those blocks mapped for reuse: in seven alternating
``scripts/bench_train.py`` pairs the update ran 8 % faster, at 0.436 of the dense-matmul rate
against 0.399 on average (higher in every pair; counted then without the symmetry loss's mirrored
replay, which the benchmark counts since: times 1.08), and the trainer 3.9 % more steps per second
(docs/experiments/2026-11-trainer-throughput.md, 2026-12-08). The cost is resident memory: up to the
trim threshold of freed heap may stay with the process (the benchmark's peak did not move).
"""

from __future__ import annotations

import ctypes
import sys

#: glibc's ``mallopt`` parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

#: Blocks below this come from the heap and are reused after free instead of unmapped.
MMAP_THRESHOLD_BYTES = 32 * 2**20
#: Freed memory at the heap's top is returned to the kernel only beyond this much.
TRIM_THRESHOLD_BYTES = 2**30


def keep_freed_memory() -> bool:
    """Set glibc's two thresholds for this process; returns whether they were set.

    False, and nothing changed, where the C library is not glibc (macOS, Windows, musl): their
    allocators have no such knobs and this speed-up does not apply there.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # musl and other C libraries
        return False
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    )
