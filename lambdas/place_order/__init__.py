"""The example business step: places an order."""
