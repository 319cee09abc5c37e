"""`kit serve`: the vLLM OpenAI server, its request checks and API key, and child-process handling."""
