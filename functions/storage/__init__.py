"""The DynamoDB plumbing every table module shares: the resource and its errors, the tables'
definitions, the items' models and every expression."""
