"""The report's words stage."""
