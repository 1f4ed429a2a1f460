"""The batching feature's pure rules: no I/O, the time given to them."""
