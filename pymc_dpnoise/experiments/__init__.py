"""The papers' experiments: one module per notebook (moved here from the package root)."""
