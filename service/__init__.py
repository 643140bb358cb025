"""The edges: CLI, HTTP app, commands, source importers, pages, configuration, logging."""
