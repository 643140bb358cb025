"""Helpers of the command line: the JSON client of a server, and the progress bar."""
