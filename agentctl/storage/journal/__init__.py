"""The journal: one op log and trash for every format's writes (issue 20), built up in
steps. So far: `trash` (trash tables with the source table's own columns and types, rows
set aside and put back exactly) and `ops` (the op log `agentctl_journal`: a write's row
changes recorded as before/after images; undo and redo as one move). No format's History
is on it yet; they move onto it one at a time (ARCHITECTURE.md, "The journal")."""
