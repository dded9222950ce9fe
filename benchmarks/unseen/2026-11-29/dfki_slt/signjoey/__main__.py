import sys
print("signjoey", sys.argv[1:])
