"""The report's publish stage: sections, charts, pages and CSVs laid out from derive's tables and words' strings,
and written; it reads only the folder it publishes to."""
