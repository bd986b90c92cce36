"""The test controls: the movable clock, fault injection, the seam every Task call passes and where
each call came from, hooks at a state's entry, and Task deadlines on the engine's clock."""
