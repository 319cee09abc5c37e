"""Recipes and their checks: the config tree and TRL's sections typed at load."""
