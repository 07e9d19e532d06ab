"""ragreplay for teams whose CI is pytest: a plugin with a gate fixture and assertion helpers."""
