"""Imports nothing: builtins.sorted is called exactly 7 times and
list.append exactly 11 times in the whole process."""
out = []
for i in range(7):
    sorted([3, i, 1])
for i in range(11):
    out.append(i)
print(len(out))
