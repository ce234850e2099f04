"""Stage 2: mentions of titles in response text: a catalog gazetteer, an LLM, or both."""
