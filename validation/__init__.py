"""phr.validation — see docs/DESIGN.md."""
