"""sys.exit with a message: printed on stderr, exit code 1."""
import sys

print("out")
sys.exit("fatal: something went wrong")
