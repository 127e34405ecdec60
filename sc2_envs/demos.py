"""Import alias of :mod:`sc2_envs.training.demos`."""

from sc2_envs.training.demos import (
    ARRAY_KEYS,
    FORMAT,
    DemoDataset,
    DemoSummary,
    SamplingConfig,
    heuristic_demonstrator,
    load_demos,
    main,
    policy_demonstrator,
    record_demos,
)

__all__ = [
    "ARRAY_KEYS",
    "DemoDataset",
    "DemoSummary",
    "FORMAT",
    "SamplingConfig",
    "heuristic_demonstrator",
    "load_demos",
    "main",
    "policy_demonstrator",
    "record_demos",
]

if __name__ == "__main__":
    main()
