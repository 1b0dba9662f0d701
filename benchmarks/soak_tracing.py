"""What ``tracemalloc`` costs the growing soak's operations (issue 34).

    python benchmarks/soak_tracing.py [--warm 15000] [--window 2000] [--windows 4]

Builds the growing soak of ``tests/reliability/test_soak.py`` (its own ``_Soak``: a store and
memory on a RAM folder, every cache bound lowered as the test lowers it) for ``--warm``
operations, then runs ``--windows`` windows of ``--window`` operations each, alternating
without and with ``tracemalloc`` (as the test runs it), and prints each window's median
milliseconds and mean Chroma calls of each kind of operation. The same process, the same
data, taken in turn: the difference is the tracing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

from reliability.helpers import remove_folder  # noqa: E402
from reliability.test_soak import _Soak  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--warm", type=int, default=15_000, help="operations before the windows")
    parser.add_argument("--window", type=int, default=2_000, help="operations a window")
    parser.add_argument("--windows", type=int, default=4, help="windows, untraced first")
    args = parser.parse_args()
    soak = _Soak(constant=False)
    try:
        for _ in range(args.warm):
            soak.step()
        soak.window_medians()
        print(f"{args.warm:,} operations first; load average {os.getloadavg()[0]:.2f}")
        for n in range(args.windows):
            traced = n % 2 == 1
            if traced:
                tracemalloc.start()
            for _ in range(args.window):
                soak.step()
            print(f"{'tracemalloc' if traced else 'untraced   '}: ms (Chroma calls)"
                  f"{soak.window_medians()}", flush=True)
            tracemalloc.stop()
        print(f"load average {os.getloadavg()[0]:.2f}")
    finally:
        soak.store.close()
        remove_folder(soak.folder)


if __name__ == "__main__":
    main()
