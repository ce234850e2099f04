"""Stage 3: mentions to catalog items: catalogs, title matching (pure), grounding."""
