"""The TUI's panes."""
