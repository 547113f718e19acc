"""No public names: the C functions of this module are cimported by _definition, _node_types, _exec_nodes and _builder."""
