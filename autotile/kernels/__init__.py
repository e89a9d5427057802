"""autotile.kernels."""
