"""autotile.measure."""
