"""Judge evaluation: benchmark loaders, metrics with explicit tie and parse-failure policies, reports."""
