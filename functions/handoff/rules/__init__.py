"""The hand-off feature's pure rules: when a conversation waits for a person, and what asks for
one."""
