"""The assistant feature's pure rules: what makes two tool calls the same call."""
