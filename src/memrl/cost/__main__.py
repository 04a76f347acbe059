"""`python -m memrl.cost`: the command, as `memrl cost` runs it."""

from memrl.cost.command import main

main()
