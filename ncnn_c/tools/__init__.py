"""Command-line tools: random weights, benchmarks."""
