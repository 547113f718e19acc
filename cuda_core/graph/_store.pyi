"""No public names: the store of a graph hierarchy, whose C API _definition, _node_base, _node_types and _builder cimport."""
