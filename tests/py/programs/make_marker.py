"""Creates the file named by its first argument: proof that it ran."""
import sys

with open(sys.argv[1], "w") as f:
    f.write("ran\n")
