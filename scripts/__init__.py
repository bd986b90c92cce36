"""Repository tools that are not part of the package (they need the example app in this checkout)."""
