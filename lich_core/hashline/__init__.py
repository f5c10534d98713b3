"""Hashline: anchored line rendering, patch parsing and applying (pure functions over strings)."""
