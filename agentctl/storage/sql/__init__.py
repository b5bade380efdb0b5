"""The shared connection layer of the SQL stores: what every format that keeps its data
in SQLite or Postgres tables needs, whatever its framework (`jsonb.py`: SQLite's binary
JSON, read and written without SQLite's own JSON functions)."""
