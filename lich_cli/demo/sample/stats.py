"""Small statistics helpers: the sample project of `lich demo`."""


def mean(values):
    """The arithmetic mean of `values`."""
    return sum(values) / len(values)


def spread(values):
    """The largest value minus the smallest."""
    return max(values) - min(values)
