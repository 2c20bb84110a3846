"""Overviews of a repository: its folders, the libraries it uses, the entry points."""
