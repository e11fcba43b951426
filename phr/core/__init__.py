"""The bottom layer: errors, settings, files written atomically, the async helper, SQLite connections, secrets
and logging. It imports nothing else from the project."""
