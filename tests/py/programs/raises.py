"""Dies of an uncaught exception raised two frames deep."""


def divide(a, b):
    return a / b


def compute():
    print("computing", flush=True)
    return divide(1, 0)


compute()
