"""Memory agents, each written once as a workflow over an abstract `generate` call."""
