"""The journal: one op log and trash for every format's writes (issue 20). `trash`: trash
tables with the source table's own columns and types (rows set aside and put back
exactly); `ops`: the op log `agentctl_journal` (a write's row changes recorded as
before/after images; undo and redo as one move); `history`: `JournalHistory`, the oplog,
undo, redo and purge every format's History shares; `legacy`: the formats' previous op
logs, moved into the journal by the first write. Every built-in format's History is on
it (ARCHITECTURE.md, "The journal")."""
