"""autotile.te."""
