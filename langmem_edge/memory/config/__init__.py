"""Configuration of ``AgentMemory`` and every tier: every number is a named default.

``MemoryConfig`` groups small pydantic models, one per concern. Each field's default is a
module-level constant with its own docstring, so the numbers of docs/architecture.md live in
one place and can be overridden per instance::

    AgentMemory(store, config={"recall": {"limit": 10}, "verification": {"enabled": False}})

Unknown keys are rejected (a typo is a :class:`~langmem_edge.errors.ConfigurationError`, not a
silently ignored option).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from langmem_edge.errors import ConfigurationError
from langmem_edge.memory.config.sections import (
    CJK_CHARS_PER_TOKEN,
    CJK_THRESHOLD,
    CONFIDENCE_BY_SOURCE,
    DEFAULT_CHARS_PER_TOKEN,
    JSON_CHARS_PER_TOKEN,
    JSON_THRESHOLD,
    CompositeConfig,
    IndexCacheConfig,
    LimitsConfig,
    RecallConfig,
    VerificationConfig,
    _merge,
    _Section,
)
from langmem_edge.memory.config.tiers import (
    ConsolidationConfig,
    EpisodicConfig,
    ReflectionConfig,
    WorkingConfig,
)

__all__ = [
    "CJK_CHARS_PER_TOKEN",
    "CJK_THRESHOLD",
    "CONFIDENCE_BY_SOURCE",
    "DEFAULT_CHARS_PER_TOKEN",
    "JSON_CHARS_PER_TOKEN",
    "JSON_THRESHOLD",
    "CompositeConfig",
    "ConsolidationConfig",
    "EpisodicConfig",
    "IndexCacheConfig",
    "LimitsConfig",
    "MemoryConfig",
    "RecallConfig",
    "ReflectionConfig",
    "VerificationConfig",
    "WorkingConfig",
    "load_config",
]


class MemoryConfig(_Section):
    """Everything ``AgentMemory`` can tune; every number is a documented default."""

    confidence_by_source: dict[str, float] = Field(
        default_factory=lambda: dict(CONFIDENCE_BY_SOURCE)
    )
    """Default confidence by source: explicit 0.9, reflection 0.85, consolidation 0.8,
    pre-compaction 0.6, turn 0.5."""
    verification: VerificationConfig = VerificationConfig()
    recall: RecallConfig = RecallConfig()
    composite: CompositeConfig = CompositeConfig()
    index: IndexCacheConfig = IndexCacheConfig()
    limits: LimitsConfig = LimitsConfig()
    episodic: EpisodicConfig = EpisodicConfig()
    """The episodic tier's config (:class:`EpisodicConfig`, or a dict of overrides)."""
    working: WorkingConfig = WorkingConfig()
    """The working tier's config (:class:`WorkingConfig`, or a dict of overrides)."""
    reflection: ReflectionConfig = ReflectionConfig()
    """The reflection job's config (:class:`ReflectionConfig`, or a dict of overrides)."""
    consolidation: ConsolidationConfig = ConsolidationConfig()
    """The consolidation pass's config (:class:`ConsolidationConfig`, or a dict)."""

    @field_validator("confidence_by_source", mode="before")
    @classmethod
    def _merge_confidence(cls, v: Any) -> Any:
        return _merge(CONFIDENCE_BY_SOURCE, v)

    @field_validator("episodic", mode="before")
    @classmethod
    def _episodic_defaults(cls, v: Any) -> Any:
        return EpisodicConfig() if v is None else v

    @model_validator(mode="after")
    def _check(self) -> MemoryConfig:
        missing = set(CONFIDENCE_BY_SOURCE) - set(self.confidence_by_source)
        if missing:
            raise ValueError(f"confidence_by_source misses {sorted(missing)}")
        for source, value in self.confidence_by_source.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"confidence_by_source[{source!r}] must be in [0, 1]")
        return self


def load_config(config: MemoryConfig | dict[str, Any] | None) -> MemoryConfig:
    """A ``MemoryConfig`` from an instance, a (nested) dict of overrides, or ``None``."""
    if config is None:
        return MemoryConfig()
    if isinstance(config, MemoryConfig):
        return config
    if not isinstance(config, dict):
        raise ConfigurationError(
            f"config must be a MemoryConfig or a dict, got {type(config).__name__}"
        )
    try:
        return MemoryConfig.model_validate(config)
    except ValidationError as e:
        raise ConfigurationError(f"invalid memory config: {e}") from e
