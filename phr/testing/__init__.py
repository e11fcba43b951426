"""Local servers that speak real provider protocols, for tests and benchmarks."""
