"""autotile.lang."""
