"""The issue's known answer for the time split: pure_loop() computes and
time.sleep() sleeps, in turns, 100 times each.  CPU time and sleep
alternate every few ms, faster than schedstat sampling can tell apart; the
scheduler's switch records tell them apart exactly."""
import time


def pure_loop():
    s = 0
    for i in range(100000):
        s += i % 7
    return s


for _ in range(100):
    pure_loop()
    time.sleep(0.01)
