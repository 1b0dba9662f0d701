"""``python -m langmem_edge.cli``: the ``langmem-edge`` command."""

from __future__ import annotations

from langmem_edge.cli import main

if __name__ == "__main__":
    main()
