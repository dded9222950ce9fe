import argparse
p = argparse.ArgumentParser(); p.add_argument("--config"); p.add_argument("--launcher")
print(p.parse_args())
