"""The report's load stage."""
