"""`python -m memrepro.config FILE`: check a config without Snakemake."""

from memrepro.config.load import main

main()
