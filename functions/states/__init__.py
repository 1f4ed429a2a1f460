"""The task states' operations, one module per state: each composes the features, none imports
another state or an entry point."""
