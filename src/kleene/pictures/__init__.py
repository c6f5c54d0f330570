"""Pictures of queries: the automaton (Graphviz DOT) and timelines of complex events (matplotlib)."""
