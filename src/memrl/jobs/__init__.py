"""The bodies of the `memrl` subcommands (memrl.cli parses and dispatches): one module per rule
family, each subcommand a `cmd_*(args, run)`."""
