import argparse
p = argparse.ArgumentParser(); p.add_argument("-c"); p.add_argument("--save", action="store_true")
print(p.parse_args())
