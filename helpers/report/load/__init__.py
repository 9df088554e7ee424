"""The report's load stage: the only one that reads files (records, the bundled reference, prices, the ladder's
grids, published figures, the style sheet) or asks the host; no figure computed here."""
