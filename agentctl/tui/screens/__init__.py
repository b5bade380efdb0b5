"""The TUI's modal screens: confirm, prompts, search, help."""
