"""Command-line interface: argument parsing only; each subcommand calls a public function."""
