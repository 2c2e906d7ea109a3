"""Does not compile: the error must look as it does untraced."""
print("never printed")
def broken(:
    pass
