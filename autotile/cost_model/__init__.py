"""autotile.cost_model."""
