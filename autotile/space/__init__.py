"""autotile.space."""
