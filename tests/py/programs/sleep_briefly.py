"""Sleeps a little, then says so: printing "completed" means no signal
reached it."""
import time

time.sleep(0.3)
print("completed")
