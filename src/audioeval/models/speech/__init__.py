"""Models that answer in speech, and the speech recognisers that turn their audio back into text."""
