"""Memory inside a LangGraph agent: prebuilt nodes, ``MemoryMiddleware`` for
``langchain.agents.create_agent``, turn resume, background extraction, ``create_memory_agent``.

This layer sits above ``langmem_edge.tools`` and ``langmem_edge.memory`` and reaches the store
only through them (see ``docs/architecture.md``).
"""
