"""Every benchmark module's `Benchmark`, by name, in the order the plan lists its jobs. Adding a
benchmark is one module beside these and its entry here."""

from __future__ import annotations

from memrepro.benchmarks import custom, longbench, mab, memalpha, memalpha_example, ruler, ruler_hqa
from memrepro.benchmarks.base import Benchmark

REGISTRY: dict[str, Benchmark] = {
    found.name: found
    for found in (
        ruler_hqa.BENCHMARK,
        ruler.BENCHMARK,
        longbench.BENCHMARK,
        memalpha.BENCHMARK,
        mab.BENCHMARK,
        memalpha_example.BENCHMARK,
        ruler_hqa.PROBE,
        custom.BENCHMARK,
    )
}
