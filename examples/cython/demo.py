"""Call into the Cython module: `ulma run demo.py [variant]` (after
`python setup.py build_ext --inplace`).  crunch() calls its C helpers
1237 and 2474 times; call_back() calls on_item() 37 times, each calling
back into helper(), whose C helper triple() runs once per call."""
import importlib
import sys

demo = importlib.import_module("ulma_demo_" + (sys.argv[1] if len(sys.argv) > 1 else "native"))


def on_item(i):
    return demo.helper(i)


def main():
    print(demo.crunch(1237), demo.call_back(on_item, 37))


if __name__ == "__main__":
    main()
