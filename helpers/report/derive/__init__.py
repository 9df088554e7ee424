"""The report's derive stage: tables of figures from what load read (aggregates, pairs, the best over best,
costs, predictions, GPU counts), built once into the context; no file read, no figure formatted."""
