"""The delivery feature's pure rules: a reply cut into the parts and segments a channel
accepts."""
