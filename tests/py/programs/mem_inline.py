"""ulma.profile(memory=True) around a block that keeps K objects in hold();
a third argument is given as memory= instead ("sample:4096")."""
import sys

import ulma

KEEP = []


def hold(k):
    for _ in range(k):
        KEEP.append(object())


with ulma.profile(sys.argv[1], summary="none", memory=sys.argv[3] if len(sys.argv) > 3 else True):
    hold(int(sys.argv[2]))
