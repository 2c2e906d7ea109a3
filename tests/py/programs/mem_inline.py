"""ulma.profile(memory=True) around a block that keeps K objects in hold()."""
import sys

import ulma

KEEP = []


def hold(k):
    for _ in range(k):
        KEEP.append(object())


with ulma.profile(sys.argv[1], summary="none", memory=True):
    hold(int(sys.argv[2]))
