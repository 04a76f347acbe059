"""`python -m memrepro.cost`: the command, as `memrepro cost` runs it."""

from memrepro.cost.command import main

main()
