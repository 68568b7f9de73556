"""Performance estimation of federated rounds (worst cases over smooth strongly convex clients)."""
