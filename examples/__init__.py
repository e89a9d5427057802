"""Examples: kernels a user writes outside the library (not installed with autotile)."""
