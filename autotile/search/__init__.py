"""autotile.search."""
