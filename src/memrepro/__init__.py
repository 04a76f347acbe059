"""MemRepro: a reproducibility pipeline for RL-trained memory agents."""

__version__ = "0.1.0"
