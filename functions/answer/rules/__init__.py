"""The answer feature's pure rules: what the model is told, and how its items are read."""
