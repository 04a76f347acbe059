"""`python -m memrl.config FILE`: check a config without Snakemake."""

from memrl.config.load import main

main()
