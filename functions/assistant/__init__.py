"""A tenant's assistant: its profile (model, instructions, knowledge, function tools) and each
tool call made once."""
