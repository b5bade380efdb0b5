"""The journal: one op log and trash for every format's writes (issue 20), built up in
steps. Here so far: `trash`, the trash tables, one per source table, with the source
table's own columns and types (rows set aside and put back exactly). The formats'
histories move onto it one at a time (see ARCHITECTURE.md, "The journal")."""
