"""Online scoring of unlabelled traffic: layered, cost-ordered, bounded, never raising."""
