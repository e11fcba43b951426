"""The PHRBench leaderboard: a view of eval's typed results (``table``), the rendered page (``page``) and the
results repo on the Hub or a local hub (``repo``)."""
