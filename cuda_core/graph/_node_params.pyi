"""No public names: the C functions of this module are cimported by _definition."""
