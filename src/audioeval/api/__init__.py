"""The public Python API: `audioeval.evaluate` and its typed result (`evaluate`, `result`), the names
`audioeval` exports (`exports`)."""
