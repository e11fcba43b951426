"""phr.cards — see docs/DESIGN.md."""
