"""The bodies of the `memrepro` subcommands (memrepro.cli parses and dispatches): one module per
rule family, each subcommand a `cmd_*(args, run)`."""
