"""The console: a read-only web page of conversations, bursts and runs, for the local
stack and a deployed one (docs/console.md). `python -m infra.console [--stack NAME]`."""
