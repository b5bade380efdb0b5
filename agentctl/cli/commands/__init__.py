"""The command modules of `agentctl`, one per command group, each thin over the library:
`register(app)` adds its commands to the root app (a group's module holds its `app`).
agentctl/cli/registry.py names the module of each command; they are imported only when
their command runs or shows its help."""
