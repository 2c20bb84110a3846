"""Neighborhoods and importance: the file graph turned into clusters and rankings."""
