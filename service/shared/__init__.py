"""State that every API process on one store shares, outside the log: registration challenges
and rate limits."""
