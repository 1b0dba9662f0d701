"""Reliability suites (issue 17): crash durability, server faults, concurrency, isolation,
bad input, soak. Quick variants run by default; ``--long`` (or ``LANGMEM_EDGE_LONG=1``) runs
the long ones. Figures and commands: ``docs/reliability.md``."""
