"""The rule engine: rules, conditions, the graph, diagnose, the planner, policies, compare."""
