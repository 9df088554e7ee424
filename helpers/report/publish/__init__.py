"""The report's publish stage."""
