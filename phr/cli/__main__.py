"""``python -m phr.cli`` (what ``accelerate launch -m phr.cli train ...`` runs on every process)."""

from phr.cli import main

main()
