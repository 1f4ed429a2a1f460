"""The assistant feature's pure rules: what makes two tool calls the same call, what the endpoint
is sent, and a person's yes to a call that waits for one."""
