"""The report's derive stage."""
