"""A user's own business Lambda: charges a card (here: makes up a charge id)."""
