"""AudioICL-Bench's procedural sound sources (percussion, machines, spoken digits, Morse) and the loaders of
the real corpora they stand in for."""
