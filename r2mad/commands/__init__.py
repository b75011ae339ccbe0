"""The command-line subcommands: each translates flags into calls of the library and prints what comes back."""
