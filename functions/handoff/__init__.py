"""A conversation handed to a person: paused and resumed, and a person's replies sent and
recorded."""
