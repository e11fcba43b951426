"""The PHRBench definition: conditions, the instance row, the folder format, metrics and prompt templates.

Builders, validation, cards, eval and the leaderboard import this vocabulary; nothing here imports them.
"""
