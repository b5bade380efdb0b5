"""The LangGraph checkpoint format (see store.py and serde.py)."""
