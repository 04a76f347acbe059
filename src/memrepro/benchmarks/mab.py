"""MemoryAgentBench (Mem-α's Table 2): instances of chunks and questions, as Memalpha's."""

from __future__ import annotations

import dataclasses

from memrepro.benchmarks import memalpha

BENCHMARK = dataclasses.replace(
    memalpha.BENCHMARK,
    name="mab",
    sets=memalpha.source_sets("mab"),
    data=memalpha.split_file("mab"),
)
