"""The working tier (L1): what one conversation needs while it runs.

Working notes, the ongoing task and turn records (the tool calls of the current turn, so a
turn untouched for 45 s can be resumed from its results) of each thread, over the
``BaseStore`` API like the other tiers, with its config (``WorkingConfig``) in
``memory/config.py``. Reach it as ``profile.working`` (:class:`ProfileWorking`). It must not
import another tier (an import-linter contract in ``pyproject.toml`` checks it).
"""

from langmem_edge.memory.working.api import ProfileWorking
from langmem_edge.memory.working.tier import OngoingTask, ThreadState, TurnRecord, TurnRow

__all__ = ["OngoingTask", "ProfileWorking", "ThreadState", "TurnRecord", "TurnRow"]
