"""phr.builders — see docs/DESIGN.md."""
