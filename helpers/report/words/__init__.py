"""The report's words stage: every string that holds a figure (fmt formats each figure once), marks, labels and
sentences; nothing read, nothing written."""
