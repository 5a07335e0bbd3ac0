"""OpenAI-compatible HTTP endpoints: the client (`client`: retries, Retry-After, endpoint-down detection)
and its adaptive concurrency (`concurrency`)."""
