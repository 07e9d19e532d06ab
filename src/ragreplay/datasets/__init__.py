"""Golden sets (versioned in the store, imported, exported, built from reviews and regression sets) and
synthetic test generation from a corpus (a model through the provider layer, or offline templates)."""
