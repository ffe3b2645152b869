"""The Store contract's fixtures (`store_parts`): each test that asks for `store` runs once per
backend."""

from store_parts import collection, factory, location, store

__all__ = ["collection", "factory", "location", "store"]
