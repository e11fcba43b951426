"""phr.training — see docs/DESIGN.md."""
