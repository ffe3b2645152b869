"""Numbered schema migrations of the server stores, shipped as package data (`postgres/NNN_*.sql`)."""
