class _HostCall:
    """What one captured host node runs; made by GraphBuilder.callback()."""
