"""Recipes and their checks: the config tree, TRL's sections typed at load, the dry-run plan."""
