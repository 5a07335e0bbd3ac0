"""Audio helpers: PCM16 WAV I/O, resampling and the offline synthesizers used by the built-in corpora."""
