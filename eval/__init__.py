"""phr.eval — see docs/DESIGN.md."""
