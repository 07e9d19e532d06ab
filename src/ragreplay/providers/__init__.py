"""Model providers: one async way to call a model (OpenAI-compatible, fake), with limits, retries and a cache."""
