"""What may be spent and who may be answered: the cost limits and their counters, and a
person's consent (opt-out)."""
