"""Quick what-ifs on one snapshot, for operators at the command line."""
